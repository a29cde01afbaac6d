#include "hlo/ir.h"

#include <algorithm>
#include <cctype>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace xonnx::hlo {

absl::string_view PrecisionName(Precision p) {
  switch (p) {
    case Precision::kHigh:
      return "high";
    case Precision::kHighest:
      return "highest";
    default:
      return "default";
  }
}

bool Instruction::SameAttributes(const Instruction& o) const {
  if (opcode_ != o.opcode_ || !shape_.Compatible(o.shape_)) return false;
  if (literal.has_value() != o.literal.has_value()) return false;
  if (literal && !(*literal == *o.literal)) return false;
  return parameter_number == o.parameter_number && tuple_index == o.tuple_index && dimensions == o.dimensions &&
         slice_starts == o.slice_starts && slice_limits == o.slice_limits && slice_strides == o.slice_strides &&
         dynamic_slice_sizes == o.dynamic_slice_sizes && padding_config == o.padding_config && window == o.window &&
         conv_dnums == o.conv_dnums && feature_group_count == o.feature_group_count &&
         batch_group_count == o.batch_group_count && precision == o.precision && dot_dnums == o.dot_dnums &&
         gather_dnums == o.gather_dnums && gather_slice_sizes == o.gather_slice_sizes &&
         scatter_dnums == o.scatter_dnums && indices_are_sorted == o.indices_are_sorted &&
         unique_indices == o.unique_indices && comparison_direction == o.comparison_direction &&
         is_stable == o.is_stable && rng_algorithm == o.rng_algorithm && frontend_attributes == o.frontend_attributes &&
         called_ == o.called_;
}

Instruction::Instruction(const Instruction& o, NoOperands)
    : literal(o.literal),
      parameter_number(o.parameter_number),
      tuple_index(o.tuple_index),
      dimensions(o.dimensions),
      slice_starts(o.slice_starts),
      slice_limits(o.slice_limits),
      slice_strides(o.slice_strides),
      dynamic_slice_sizes(o.dynamic_slice_sizes),
      padding_config(o.padding_config),
      window(o.window),
      conv_dnums(o.conv_dnums),
      feature_group_count(o.feature_group_count),
      batch_group_count(o.batch_group_count),
      precision(o.precision),
      dot_dnums(o.dot_dnums),
      gather_dnums(o.gather_dnums),
      gather_slice_sizes(o.gather_slice_sizes),
      scatter_dnums(o.scatter_dnums),
      indices_are_sorted(o.indices_are_sorted),
      unique_indices(o.unique_indices),
      comparison_direction(o.comparison_direction),
      is_stable(o.is_stable),
      rng_algorithm(o.rng_algorithm),
      metadata(o.metadata),
      frontend_attributes(o.frontend_attributes),
      opcode_(o.opcode_),
      shape_(o.shape_),
      name_(o.name_),
      id_(o.id_),
      called_(o.called_) {}

Instruction::Instruction(const Instruction& o) : Instruction(o, NoOperands{}) {
  for (Instruction* op : o.operands_) AppendOperand(op);
}

std::unique_ptr<Instruction> Instruction::CopyReading(const Instruction& other,
                                                      const std::vector<Instruction*>& operands) {
  std::unique_ptr<Instruction> copy(new Instruction(other, NoOperands{}));
  for (Instruction* op : operands) copy->AppendOperand(op);
  return copy;
}

Instruction::~Instruction() {
  for (Instruction* op : operands_)
    if (op) op->RemoveUser(this);
}

// A null operand is kept as given (the builder reports it as an error).
void Instruction::AppendOperand(Instruction* op) {
  operands_.push_back(op);
  if (op) op->users_.push_back(this);
}

void Instruction::ReplaceOperand(int64_t i, Instruction* op) {
  if (operands_[i] == op) return;
  if (operands_[i]) operands_[i]->RemoveUser(this);
  operands_[i] = op;
  if (op) op->users_.push_back(this);
}

void Instruction::RemoveUser(const Instruction* user) {
  for (size_t k = users_.size(); k-- > 0;)
    if (users_[k] == user) {
      users_.erase(users_.begin() + k);
      return;
    }
}

Computation::~Computation() {
  // Operands may be destroyed before their users, so no destructor may
  // look at another instruction; what this computation's instructions read
  // elsewhere forgets them first.
  std::vector<Instruction*> all;
  for (auto& i : instructions_) all.push_back(i.get());
  DropLinks(all);
}

void Computation::DropLinks(const std::vector<Instruction*>& gone) {
  // Each operand that stays has its user list filtered once, however many
  // of `gone` read it.
  absl::flat_hash_set<const Instruction*> set(gone.begin(), gone.end());
  absl::flat_hash_set<Instruction*> staying;
  for (Instruction* g : gone)
    for (Instruction* op : g->operands_)
      if (op && !set.contains(op)) staying.insert(op);
  for (Instruction* op : staying) std::erase_if(op->users_, [&](const Instruction* u) { return set.contains(u); });
  for (Instruction* g : gone) {
    g->operands_.clear();
    g->users_.clear();
  }
}

std::vector<Instruction*> Computation::parameters() const {
  std::vector<Instruction*> params;
  for (const auto& i : instructions_)
    if (i->opcode() == Opcode::kParameter) params.push_back(i.get());
  std::sort(params.begin(), params.end(),
            [](Instruction* a, Instruction* b) { return a->parameter_number < b->parameter_number; });
  return params;
}

Instruction* Computation::parameter(int64_t i) const {
  for (const auto& instr : instructions_)
    if (instr->opcode() == Opcode::kParameter && instr->parameter_number == i) return instr.get();
  return nullptr;
}

Instruction* Computation::AddInstruction(std::unique_ptr<Instruction> instr) {
  if (parent_) {
    std::string base = instr->name().empty() ? std::string(OpcodeName(instr->opcode())) : instr->name();
    instr->set_name(parent_->UniqueName(base));
    instr->set_id(parent_->NextId());
  }
  instructions_.push_back(std::move(instr));
  return instructions_.back().get();
}

void Computation::RemoveInstruction(Instruction* instr) {
  std::erase_if(instructions_, [&](const std::unique_ptr<Instruction>& i) { return i.get() == instr; });
}

void Computation::ReplaceAllUsesWith(Instruction* old_instr, Instruction* new_instr) {
  if (old_instr == new_instr) return;
  // Rewires every user's slots at once (not one ReplaceOperand at a time,
  // which would search old_instr's user list for each).
  std::vector<Instruction*> kept;  // new_instr's own reads of old_instr stay
  for (Instruction* u : old_instr->users_) {
    if (u == new_instr) {
      kept.push_back(u);
      continue;
    }
    // A user appears once per slot that reads old_instr: rewire one slot.
    for (Instruction*& op : u->operands_)
      if (op == old_instr) {
        op = new_instr;
        new_instr->users_.push_back(u);
        break;
      }
  }
  old_instr->users_ = std::move(kept);
  if (root_ == old_instr) root_ = new_instr;
}

std::vector<std::vector<Instruction*>> Computation::ComputeUsers() const {
  absl::flat_hash_map<const Instruction*, int64_t> index;
  for (int64_t k = 0; k < instruction_count(); ++k) index[instructions_[k].get()] = k;
  std::vector<std::vector<Instruction*>> users(instructions_.size());
  for (const auto& i : instructions_) {
    for (Instruction* op : i->operands()) {
      auto& u = users[index.at(op)];
      if (u.empty() || u.back() != i.get()) u.push_back(i.get());
    }
  }
  return users;
}

bool Computation::SingleUse(const Instruction* i) const {
  if (i == root_) return false;
  const Instruction* only = nullptr;
  for (const Instruction* u : i->users()) {
    if (u != root_ && u->users().empty()) continue;  // left dead by a rewrite
    if (only && only != u) return false;
    only = u;
  }
  return only != nullptr;
}

int64_t Computation::Canonicalize() {
  absl::flat_hash_map<const Instruction*, int> state;  // 1 visiting, 2 done
  std::vector<Instruction*> order;
  // Iterative DFS: parameters first (in number order), then the root's cone.
  std::vector<std::pair<Instruction*, size_t>> stack;
  auto visit = [&](Instruction* start) {
    if (state[start] == 2) return;
    stack.push_back({start, 0});
    state[start] = 1;
    while (!stack.empty()) {
      auto& [instr, next] = stack.back();
      if (next < instr->operands().size()) {
        Instruction* op = instr->operand(next++);
        if (state[op] == 0) {
          state[op] = 1;
          stack.push_back({op, 0});
        }
      } else {
        state[instr] = 2;
        order.push_back(instr);
        stack.pop_back();
      }
    }
  };
  for (Instruction* p : parameters()) visit(p);
  if (root_) visit(root_);
  absl::flat_hash_map<const Instruction*, int64_t> rank;
  for (int64_t k = 0; k < static_cast<int64_t>(order.size()); ++k) rank[order[k]] = k;
  int64_t before = instructions_.size();
  std::vector<std::unique_ptr<Instruction>> kept(order.size());
  std::vector<std::unique_ptr<Instruction>> dropped;
  for (auto& i : instructions_) {
    auto it = rank.find(i.get());
    if (it != rank.end())
      kept[it->second] = std::move(i);
    else
      dropped.push_back(std::move(i));
  }
  instructions_ = std::move(kept);
  // The dropped are unlinked together (one removal at a time would search
  // a shared constant's list of thousands of users for each).
  std::vector<Instruction*> gone;
  for (auto& d : dropped) gone.push_back(d.get());
  DropLinks(gone);
  dropped.clear();
  return before - static_cast<int64_t>(instructions_.size());
}

std::unique_ptr<Computation> Computation::Clone(Module* m, std::string name) const {
  auto c = std::make_unique<Computation>(std::move(name));
  c->set_parent(m);
  absl::flat_hash_map<const Instruction*, Instruction*> map;
  for (const auto& i : instructions_) {
    std::vector<Instruction*> operands;
    for (const Instruction* op : i->operands()) operands.push_back(map.at(op));
    auto copy = Instruction::CopyReading(*i, operands);
    copy->set_name(i->name());
    copy->set_id(i->id());
    c->instructions_.push_back(std::move(copy));
    map[i.get()] = c->instructions_.back().get();
  }
  c->root_ = root_ ? map.at(root_) : nullptr;
  c->id_ = id_;
  return c;
}

std::string Module::UniqueName(absl::string_view base) {
  std::string clean;
  for (char ch : base)
    clean += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '-') ? ch : '_';
  // XLA rejects purely numeric names and names starting with a digit confuse
  // its text parser; prefix them.
  if (clean.empty() || std::isdigit(static_cast<unsigned char>(clean[0]))) clean = "v" + clean;
  // Suffixes resume where the base's last one ended: a chain of thousands
  // of nodes named alike would otherwise try them all again each time.
  std::string name = clean;
  int64_t& next = next_suffix_[clean];
  while (used_names_.contains(name)) name = absl::StrCat(clean, ".", ++next);
  used_names_.insert(name);
  return name;
}

Computation* Module::AddComputation(std::unique_ptr<Computation> c) {
  c->set_name(UniqueName(c->name()));
  c->set_parent(this);
  c->set_id(NextId());
  computations_.push_back(std::move(c));
  return computations_.back().get();
}

void Module::MoveLeafToFront(Computation* c) {
  auto it = std::find_if(computations_.begin(), computations_.end(), [&](const auto& p) { return p.get() == c; });
  if (it != computations_.end()) std::rotate(computations_.begin(), it, std::next(it));
}

void Module::RemoveUnreachableComputations() {
  absl::flat_hash_set<const Computation*> live;
  std::vector<const Computation*> work = {entry_};
  while (!work.empty()) {
    const Computation* c = work.back();
    work.pop_back();
    if (!c || !live.insert(c).second) continue;
    for (const auto& i : c->instructions())
      for (Computation* callee : i->called_computations()) work.push_back(callee);
  }
  std::erase_if(computations_, [&](const std::unique_ptr<Computation>& c) { return !live.contains(c.get()); });
}

std::unique_ptr<Module> Module::Clone() const {
  auto m = std::make_unique<Module>(name_);
  m->used_names_ = used_names_;
  m->next_id_ = next_id_;
  absl::flat_hash_map<const Computation*, Computation*> map;
  for (const auto& c : computations_) {
    auto copy = c->Clone(m.get(), c->name());
    for (const auto& i : copy->instructions())
      for (int64_t k = 0; k < static_cast<int64_t>(i->called_computations().size()); ++k)
        i->ReplaceCalledComputation(k, map.at(i->called_computations()[k]));
    m->computations_.push_back(std::move(copy));
    map[c.get()] = m->computations_.back().get();
  }
  m->entry_ = entry_ ? map.at(entry_) : nullptr;
  m->aliases_ = aliases_;
  return m;
}

absl::Status Module::BindParameters(std::vector<std::pair<int64_t, Literal>> values) {
  if (!entry_) return absl::FailedPreconditionError("the module has no entry computation");
  std::vector<Instruction*> params;
  for (int64_t k = 0; k < entry_->num_parameters(); ++k) params.push_back(entry_->parameter(k));
  std::vector<bool> bound(params.size(), false);
  for (const auto& [number, value] : values) {
    if (number < 0 || number >= static_cast<int64_t>(params.size()) || !params[number])
      return absl::InvalidArgumentError(
          absl::StrCat("cannot bind parameter ", number, ": the entry has ", params.size()));
    if (bound[number]) return absl::InvalidArgumentError(absl::StrCat("parameter ", number, " is bound twice"));
    if (!value.shape().Compatible(params[number]->shape()))
      return absl::InvalidArgumentError(absl::StrCat("parameter ", number, " is ", params[number]->shape().ToString(),
                                                     ", the value bound to it ", value.shape().ToString()));
    bound[number] = true;
  }
  for (auto& [number, value] : values) {
    Instruction* param = params[number];
    auto c = std::make_unique<Instruction>(Opcode::kConstant, param->shape());
    c->literal = std::move(value);
    c->set_name(UniqueName(absl::StrCat(param->name(), ".value")));
    c->set_id(NextId());
    c->metadata = param->metadata;
    Instruction* ci = entry_->AddInstruction(std::move(c));
    entry_->ReplaceAllUsesWith(param, ci);
    entry_->RemoveInstruction(param);
  }
  int64_t next = 0;
  std::vector<int64_t> renumbered(params.size(), -1);
  for (size_t k = 0; k < params.size(); ++k)
    if (!bound[k]) renumbered[k] = params[k]->parameter_number = next++;
  // A bound parameter has no buffer to donate: its aliases go.
  std::vector<Alias> kept;
  for (const Alias& a : aliases_)
    if (a.parameter >= 0 && a.parameter < static_cast<int64_t>(renumbered.size()) && renumbered[a.parameter] >= 0)
      kept.push_back({a.output, renumbered[a.parameter]});
  aliases_ = std::move(kept);
  entry_->Canonicalize();
  return absl::OkStatus();
}

}  // namespace xonnx::hlo
