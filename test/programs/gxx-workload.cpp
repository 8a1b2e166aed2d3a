/* SPDX-License-Identifier: MIT */
// STL-heavy program for program-gxx (run-program.sh gxx): compiled by g++ -O2 with and
// without the preload (the object files must be identical), then run with and without it
// (the outputs must be identical). Deterministic: its own LCG, sorted output of hashed
// containers.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <iostream>
#include <list>
#include <map>
#include <memory>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <variant>
#include <vector>

namespace {

struct Lcg {
  uint64_t state;
  explicit Lcg(uint64_t seed) : state(seed) {}
  uint32_t next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state >> 33);
  }
  std::string word(size_t n) {
    std::string s;
    for (size_t i = 0; i < n; i++) s.push_back(static_cast<char>('a' + next() % 26));
    return s;
  }
};

uint64_t fnv(const std::string& s, uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

// ---- template-heavy part: a compile-time typed pipeline over tuples and variants ----
template <typename T> struct Weight;
template <> struct Weight<int> { static constexpr int value = 1; };
template <> struct Weight<std::string> { static constexpr int value = 3; };
template <typename T> struct Weight<std::vector<T>> { static constexpr int value = 5 + Weight<T>::value; };
template <typename K, typename V> struct Weight<std::map<K, V>> { static constexpr int value = 7 + Weight<K>::value * Weight<V>::value; };

template <typename... Ts>
constexpr int total_weight() { return (0 + ... + Weight<Ts>::value); }

template <typename Tuple, size_t... I>
size_t tuple_sizes(const Tuple& t, std::index_sequence<I...>) {
  auto size_of = [](const auto& x) -> size_t {
    using X = std::decay_t<decltype(x)>;
    if constexpr (std::is_same_v<X, int>) return 1;
    else return x.size();
  };
  return (0 + ... + size_of(std::get<I>(t)));
}

template <typename... Ts>
size_t tuple_sizes(const std::tuple<Ts...>& t) { return tuple_sizes(t, std::index_sequence_for<Ts...>{}); }

using Value = std::variant<int, std::string, std::vector<int>>;

struct Visitor {
  uint64_t& acc;
  void operator()(int v) const { acc = acc * 31 + static_cast<uint64_t>(v); }
  void operator()(const std::string& s) const { acc = fnv(s, acc); }
  void operator()(const std::vector<int>& v) const { acc = acc * 131 + std::accumulate(v.begin(), v.end(), 0ULL); }
};

template <typename Container, typename Key = typename Container::key_type>
std::vector<Key> sorted_keys(const Container& c) {
  std::vector<Key> keys;
  keys.reserve(c.size());
  for (const auto& kv : c) keys.push_back(kv.first);
  std::sort(keys.begin(), keys.end());
  return keys;
}

// ---- object graph with shared_ptr / weak_ptr ----
struct Node {
  int id;
  std::string name;
  std::vector<std::shared_ptr<Node>> children;
  std::weak_ptr<Node> parent;
  Node(int i, std::string n) : id(i), name(std::move(n)) {}
};

std::shared_ptr<Node> build_tree(Lcg& rng, int depth, int& next_id, const std::shared_ptr<Node>& parent) {
  auto node = std::make_shared<Node>(next_id++, rng.word(6));
  node->parent = parent;
  if (depth > 0) {
    int n = 2 + static_cast<int>(rng.next() % 3);
    for (int i = 0; i < n; i++) node->children.push_back(build_tree(rng, depth - 1, next_id, node));
  }
  return node;
}

uint64_t walk(const std::shared_ptr<Node>& node, int depth) {
  uint64_t h = fnv(node->name) + static_cast<uint64_t>(node->id) * static_cast<uint64_t>(depth + 1);
  if (auto p = node->parent.lock()) h ^= static_cast<uint64_t>(p->id) << 7;
  for (const auto& c : node->children) h = h * 1000003ULL + walk(c, depth + 1);
  return h;
}

}  // namespace

int main() {
  Lcg rng(2024);

  // map / unordered_map word counts
  std::map<std::string, int> ordered;
  std::unordered_map<std::string, std::vector<int>> positions;
  for (int i = 0; i < 200000; i++) {
    std::string w = rng.word(2 + rng.next() % 3);
    ordered[w]++;
    positions[w].push_back(i);
  }
  uint64_t h = 0;
  for (const auto& k : sorted_keys(positions)) h = fnv(k, h) + positions[k].size();
  auto most = std::max_element(ordered.begin(), ordered.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second || (a.second == b.second && a.first > b.first); });
  std::cout << "words " << ordered.size() << " " << positions.size() << " most " << most->first << "=" << most->second
            << " hash " << h << "\n";

  // vectors and algorithms
  std::vector<uint32_t> v(300000);
  std::generate(v.begin(), v.end(), [&] { return rng.next() % 1000000; });
  std::vector<uint32_t> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  std::stable_sort(v.begin(), v.end(), [](uint32_t a, uint32_t b) { return a % 1000 < b % 1000; });
  auto last = std::unique(sorted.begin(), sorted.end());
  sorted.erase(last, sorted.end());
  std::vector<uint32_t> evens;
  std::copy_if(sorted.begin(), sorted.end(), std::back_inserter(evens), [](uint32_t x) { return x % 2 == 0; });
  std::cout << "vector unique " << sorted.size() << " evens " << evens.size() << " first " << v.front() << " last " << v.back()
            << " sum " << std::accumulate(v.begin(), v.end(), 0ULL) << "\n";

  // strings and streams
  std::ostringstream text;
  for (int i = 0; i < 20000; i++)
    text << rng.word(5) << "-" << (rng.next() % 10000) << " " << rng.word(7) << "@" << rng.word(4) << ".org x=" << (rng.next() % 999) << "\n";
  std::string all = text.str();
  std::istringstream in(all);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);

  // regex
  std::regex pattern(R"(^([a-z]+)-(\d+) (\w+)@(\w+)\.org x=(\d+)$)");
  uint64_t total = 0;
  size_t matched = 0;
  for (const auto& l : lines) {
    std::smatch m;
    if (std::regex_match(l, m, pattern)) {
      matched++;
      total += std::stoul(m[2].str()) + std::stoul(m[5].str());
    }
  }
  std::string head = all.substr(0, 20000);
  std::string replaced = std::regex_replace(head, std::regex(R"(\d+)"), "#");
  std::cout << "regex matched " << matched << " total " << total << " replaced " << replaced.size() << "\n";

  // shared_ptr object graph
  int next_id = 0;
  auto root = build_tree(rng, 7, next_id, nullptr);
  std::cout << "tree nodes " << next_id << " hash " << walk(root, 0) << " root uses " << root.use_count() << "\n";
  root.reset();

  // variants, tuples and the compile-time weights
  std::vector<Value> values;
  for (int i = 0; i < 50000; i++) {
    switch (rng.next() % 3) {
      case 0: values.emplace_back(static_cast<int>(rng.next() % 1000)); break;
      case 1: values.emplace_back(rng.word(1 + rng.next() % 12)); break;
      default: values.emplace_back(std::vector<int>(rng.next() % 20, static_cast<int>(i % 7))); break;
    }
  }
  uint64_t acc = 0;
  for (const auto& val : values) std::visit(Visitor{acc}, val);
  auto tup = std::make_tuple(std::string("abc"), std::vector<int>(10), 7, std::map<int, int>{{1, 2}, {3, 4}});
  std::cout << "variant acc " << acc << " weight " << total_weight<int, std::string, std::vector<std::string>, std::map<std::string, int>>()
            << " tuple " << tuple_sizes(tup) << "\n";

  // lists, sets and a multimap: node-based containers churn
  std::list<std::string> lst;
  std::set<std::pair<int, std::string>> st;
  std::multimap<int, std::function<int(int)>> funcs;
  for (int i = 0; i < 100000; i++) {
    lst.push_back(rng.word(3));
    if (lst.size() > 1000) lst.pop_front();
    st.emplace(static_cast<int>(rng.next() % 5000), lst.back());
    if (i % 1000 == 0) funcs.emplace(i % 7, [i](int x) { return x + i; });
  }
  int fsum = 0;
  for (const auto& f : funcs) fsum += f.second(f.first);
  std::cout << "nodes list " << lst.size() << " set " << st.size() << " funcs " << funcs.size() << " " << fsum << "\n";
  return 0;
}
