#include "onnx/topo_sort.h"

#include <map>
#include <queue>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status.h"
#include "onnx/graph_split.h"

namespace xonnx::onnx_import {

namespace {

// Every name a node reads: its inputs, and the inputs of the nodes of its
// subgraphs at any depth (a superset of the outer values they read, which
// is all the order needs: names a subgraph defines itself are produced by
// no node of the outer graph).
void Reads(const onnx::NodeProto& n, std::set<std::string>* out) {
  for (const auto& i : n.input())
    if (!i.empty()) out->insert(i);
  for (const auto& a : n.attribute()) {
    if (a.has_g())
      for (const auto& sub : a.g().node()) Reads(sub, out);
    for (const auto& g : a.graphs())
      for (const auto& sub : g.node()) Reads(sub, out);
  }
}

absl::Status SortSubgraphs(onnx::NodeProto* n, const std::string& path, int* moved) {
  for (auto& a : *n->mutable_attribute()) {
    if (a.has_g()) RETURN_IF_ERROR(SortNodes(a.mutable_g(), path, moved));
    for (auto& g : *a.mutable_graphs()) RETURN_IF_ERROR(SortNodes(&g, path, moved));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SortNodes(onnx::GraphProto* g, const std::string& path, int* moved) {
  for (auto& n : *g->mutable_node()) RETURN_IF_ERROR(SortSubgraphs(&n, path, moved));
  const int count = g->node_size();
  std::map<std::string, int> producer;
  for (int i = 0; i < count; ++i)
    for (const auto& o : g->node(i).output())
      if (!o.empty()) producer.emplace(o, i);
  // Kahn's algorithm, always taking the earliest ready node in file order,
  // so that a graph already in order keeps it exactly.
  std::vector<std::vector<int>> users(count);
  std::vector<int> waiting(count, 0);
  for (int i = 0; i < count; ++i) {
    std::set<std::string> reads;
    Reads(g->node(i), &reads);
    std::set<int> from;
    for (const auto& r : reads)
      if (auto p = producer.find(r); p != producer.end() && p->second != i) from.insert(p->second);
    for (int p : from) users[p].push_back(i);
    waiting[i] = from.size();
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < count; ++i)
    if (waiting[i] == 0) ready.push(i);
  std::vector<int> order;
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[i])
      if (--waiting[u] == 0) ready.push(u);
  }
  if (static_cast<int>(order.size()) != count) {
    std::vector<std::string> cycle;
    for (int i = 0; i < count && cycle.size() < 8; ++i)
      if (waiting[i] > 0) cycle.push_back(NodeLabel(g->node(i)));
    int left = count - static_cast<int>(order.size());
    return InvalidArgument(
        "%s: graph '%s' has a cycle: %d node%s cannot be ordered, each reading what another produces (%s%s)", path,
        g->name(), left, left == 1 ? "" : "s", absl::StrJoin(cycle, ", "), left > 8 ? ", ..." : "");
  }
  bool in_order = true;
  for (int i = 0; i < count; ++i) in_order &= order[i] == i;
  if (in_order) return absl::OkStatus();
  google::protobuf::RepeatedPtrField<onnx::NodeProto> sorted;
  for (int i : order) *sorted.Add() = std::move(*g->mutable_node(i));
  g->mutable_node()->Swap(&sorted);
  ++*moved;
  return absl::OkStatus();
}

}  // namespace xonnx::onnx_import
