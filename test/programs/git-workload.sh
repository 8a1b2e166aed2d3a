#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Deterministic git session for program-git (run-program.sh git): run once without and once
# with the preload, each in its own empty directory; stdout, stderr and the exit status must
# be the same. Dates, names, e-mails, HOME and the config are fixed, so every hash is too.
# Usage: git-workload.sh EMPTY-DIR
set -euo pipefail
dir=$1
cd "$dir"

export HOME=$dir/home GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME="Preload Test" GIT_AUTHOR_EMAIL="preload@example.invalid"
export GIT_COMMITTER_NAME="Preload Test" GIT_COMMITTER_EMAIL="preload@example.invalid"
export TZ=UTC LC_ALL=C GIT_PAGER=cat PAGER=cat
mkdir -p "$HOME"

# commit N: fixed date per commit so hashes do not depend on the clock
commit() {
  local n=$1 msg=$2
  GIT_AUTHOR_DATE="2024-01-01T00:00:$(printf %02d "$n")Z" \
  GIT_COMMITTER_DATE="2024-01-01T00:00:$(printf %02d "$n")Z" \
    git commit -q -m "$msg"
}

# write file PATH with LINES lines derived from SEED (an LCG in bash: no external tool)
gen_file() {
  local path=$1 lines=$2 seed=$3 i
  local -a out=()
  for ((i = 0; i < lines; i++)); do
    seed=$(( (seed * 1103515245 + 12345) % 2147483648 ))
    out+=("line $i of $path: value $seed")
  done
  printf '%s\n' "${out[@]}" > "$path"
}

git init -q -b main repo
cd repo
git config core.autocrlf false
git config gc.auto 0            # gc only when this script says so

# a tree of 300 files in 10 directories
for d in $(seq 0 9); do
  mkdir -p "dir$d/sub"
  for f in $(seq 0 29); do
    if (( f < 20 )); then gen_file "dir$d/file$f.txt" $(( 10 + (d * 7 + f) % 40 )) $(( d * 100 + f ))
    else gen_file "dir$d/sub/file$f.txt" 25 $(( d * 1000 + f )); fi
  done
done
git add -A
commit 1 "initial tree of 300 files"

# several commits on main: edits, renames, deletions
for n in 2 3 4 5; do
  for d in $(seq 0 2 9); do gen_file "dir$d/file$n.txt" 30 $(( n * 77 + d )); done
  git mv "dir$n/file10.txt" "dir$n/renamed$n.txt"
  git rm -q "dir$n/sub/file2$n.txt"
  git add -A
  commit "$n" "main change $n"
done

# a branch with its own changes, then more on main, then a merge without conflicts
git checkout -q -b feature HEAD~2
for n in 6 7 8; do
  for d in 1 3 5 7 9; do gen_file "dir$d/sub/feature$n.txt" 40 $(( n * 13 + d )); done
  gen_file "dir9/file1$n.txt" 20 $(( n * 5 ))
  git add -A
  commit "$n" "feature change $n"
done
git checkout -q main
gen_file "dir0/file0.txt" 50 999
git add -A
commit 9 "main change 9"
GIT_AUTHOR_DATE="2024-01-01T00:00:10Z" GIT_COMMITTER_DATE="2024-01-01T00:00:10Z" \
  git merge -q --no-ff -m "merge feature" feature

# a change in the work tree for diff and status
gen_file "dir2/file3.txt" 35 4242
echo "untracked" > untracked.txt

echo "== log"
git log --graph --format='%H %an %ad %s' --date=iso-strict
echo "== log --stat (last 3)"
git log --stat -3 --format='%h %s'
echo "== diff HEAD~3 HEAD"
git diff HEAD~3 HEAD | sha256sum
git diff --stat HEAD~3 HEAD
echo "== diff (work tree)"
git diff
echo "== status"
git status --porcelain=v1
git status
echo "== gc"
git gc -q --aggressive
git count-objects -v | grep -E '^(count|in-pack|packs|garbage)'
echo "== fsck"
git fsck --full --strict
echo "== rev-list"
git rev-list --all --objects | sort | sha256sum
echo "== done"
