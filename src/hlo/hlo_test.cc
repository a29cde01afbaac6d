#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "hlo/builder.h"
#include "hlo/parser.h"
#include "hlo/printer.h"
#include "hlo/proto_codec.h"
#include "hlo/rewrite.h"
#include "hlo/verifier.h"

namespace xonnx::hlo {
namespace {

// A module exercising most attribute kinds: reduce with a callee, dot,
// convolution, slice, pad, broadcast, compare/select, metadata.
std::unique_ptr<Module> SampleModule() {
  auto m = std::make_unique<Module>("sample");
  Builder b(m.get(), "main");
  b.set_metadata({.op_type = "Conv", .op_name = "conv_1"});
  auto* x = b.Parameter(0, Shape(F32, {1, 2, 5, 5}), "input");
  auto* w = b.Constant(Literal(Shape(F32, {3, 2, 3, 3})));
  Window win;
  win.dimensions.resize(2, WindowDimension{3, 1, 1, 1, 1, 1, false});
  ConvolutionDimensionNumbers dn;
  dn.input_spatial_dimensions = {2, 3};
  dn.kernel_spatial_dimensions = {2, 3};
  dn.output_spatial_dimensions = {2, 3};
  auto* conv = b.Convolution(x, w, win, dn, 1);
  b.set_metadata({.op_type = "ReduceSum", .op_name = "sum_1"});
  auto* zero = b.ScalarConstant(F32, 0);
  auto* sum = b.Reduce({conv}, {zero}, {2, 3}, b.ScalarReducer(Opcode::kAdd, F32));
  auto* sl = b.Slice(sum, {0, 1}, {1, 3}, {1, 1});
  auto* pad = b.Pad(sl, zero, {{0, 0, 0}, {1, 2, 1}});
  auto* bc = b.Broadcast(zero, {1, 6}, {});
  auto* cmp = b.Compare(pad, bc, ComparisonDirection::kGt);
  auto* sel = b.Select(cmp, pad, bc);
  DotDimensionNumbers dd;
  dd.lhs_contracting_dimensions = {1};
  dd.rhs_contracting_dimensions = {0};
  auto* dot = b.Dot(sel, b.Constant(Literal::Vector<float>({1, 2, 3, 4, 5, 6}).Reshape({6, 1})), dd);
  dot->precision = Precision::kHighest;
  // 16-bit literals travel as little-endian bytes, as XLA reads them.
  auto* s16 = b.Constant(Literal::Vector<int16_t>({-3, 7, 32767}));
  auto* root = b.Tuple({dot, b.Convert(sel, S32), s16});
  auto c = b.Build(root);
  EXPECT_TRUE(c.ok()) << c.status();
  m->set_entry(*c);
  return m;
}

// The rewrite helpers make valid instructions that carry the metadata of
// the instruction they stand in for.
TEST(Rewrite, HelpersMakeVerifiableInstructionsWithTheirOriginsMetadata) {
  auto m = ParseText(R"(HloModule m
ENTRY e {
  x = s8[2,3] parameter(0)
  w = s8[3,4] parameter(1)
  xf = f32[2,3] convert(x), metadata={op_type="DequantizeLinear" op_name="dq"}
  wf = f32[3,4] convert(w)
  ROOT y = f32[2,4] dot(xf, wf), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_type="MatMul" op_name="mm"}
})");
  ASSERT_TRUE(m.ok()) << m.status();
  Computation* c = (*m)->entry();
  Instruction* y = c->root();
  const DotDimensionNumbers dnums = y->dot_dnums;  // y is gone once the new root replaces it
  Instruction* x = y->operand(0)->operand(0);
  Instruction* w = y->operand(1)->operand(0);
  Instruction* xi = AddConvert(c, x, S32, y->operand(0));
  Instruction* wi = AddConvert(c, w, S32, y->operand(0));
  Instruction* sums = AddCopyOf(c, *y, {xi, wi}, Shape(S32, {2, 4}));
  Instruction* scale = AddBroadcast(c, AddConstant(c, Literal::Scalar<float>(0.5f)), {2, 4}, {}, y);
  Instruction* r = AddBinary(c, Opcode::kMultiply, AddConvert(c, sums, F32, y), scale, y);
  Instruction* flat = AddReshape(c, r, {8}, y);
  c->set_root(AddReshape(c, flat, {2, 4}, y));
  c->Canonicalize();
  ASSERT_TRUE(Verify(**m).ok()) << ToText(**m);
  EXPECT_EQ(sums->opcode(), Opcode::kDot);
  EXPECT_EQ(sums->dot_dnums, dnums);
  EXPECT_EQ(sums->metadata.op_name, "mm");
  EXPECT_EQ(xi->metadata.op_name, "dq");
  EXPECT_EQ(r->metadata.op_name, "mm");
  EXPECT_EQ(r->shape(), Shape(F32, {2, 4}));
}

// Every instruction knows its readers, through every way operands change,
// so replacing a value's uses takes time in its readers, not in the
// computation: a million-node chain imports in linear time.
TEST(Users, FollowOperandChangesReplacementsCopiesAndRemovals) {
  auto m = ParseText(R"(HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  a = f32[4] add(x, x)
  b = f32[4] multiply(a, y)
  c = f32[4] negate(a)
  ROOT t = (f32[4], f32[4]) tuple(b, c)
})");
  ASSERT_TRUE(m.ok()) << m.status();
  Computation* comp = (*m)->entry();
  Instruction* x = comp->parameter(0);
  Instruction* y = comp->parameter(1);
  Instruction* a = comp->root()->operand(0)->operand(0);
  Instruction* b = comp->root()->operand(0);
  Instruction* c = comp->root()->operand(1);
  EXPECT_THAT(x->users(), testing::ElementsAre(a, a));  // once per operand slot
  EXPECT_THAT(a->users(), testing::UnorderedElementsAre(b, c));
  EXPECT_FALSE(comp->SingleUse(a));
  EXPECT_TRUE(comp->SingleUse(c));
  EXPECT_FALSE(comp->SingleUse(comp->root()));
  // A copy reads what the original reads, with every attribute.
  auto copy = std::make_unique<Instruction>(*b);
  EXPECT_TRUE(copy->SameAttributes(*b));
  EXPECT_THAT(a->users(), testing::UnorderedElementsAre(b, c, copy.get()));
  copy->ReplaceOperand(0, x);
  EXPECT_THAT(a->users(), testing::UnorderedElementsAre(b, c));
  copy.reset();
  EXPECT_THAT(x->users(), testing::ElementsAre(a, a));
  // A copy made to read other operands never registers with the original's
  // (a module cloned while other threads read it is left as it was), and a
  // clone of the module leaves every user list of the original alone.
  auto reading_x = Instruction::CopyReading(*b, {x, x});
  EXPECT_THAT(a->users(), testing::UnorderedElementsAre(b, c));
  EXPECT_THAT(x->users(), testing::ElementsAre(a, a, reading_x.get(), reading_x.get()));
  reading_x.reset();
  std::unique_ptr<Module> clone = (*m)->Clone();
  EXPECT_THAT(a->users(), testing::UnorderedElementsAre(b, c));
  EXPECT_THAT(x->users(), testing::ElementsAre(a, a));
  EXPECT_THAT(y->users(), testing::ElementsAre(b));
  Instruction* clone_a = clone->entry()->root()->operand(1)->operand(0);
  EXPECT_THAT(clone->entry()->parameter(0)->users(), testing::ElementsAre(clone_a, clone_a));
  // Replacing a's uses moves its readers to y; a reader left dead by a
  // rewrite does not count as a use.
  comp->ReplaceAllUsesWith(a, y);
  EXPECT_TRUE(a->users().empty());
  EXPECT_THAT(y->users(), testing::UnorderedElementsAre(b, b, c));
  EXPECT_FALSE(comp->SingleUse(y));
  comp->ReplaceAllUsesWith(c, x);
  EXPECT_TRUE(comp->SingleUse(y)) << "c, left dead, still reads y";
  // Canonicalize drops a and c and forgets them as readers.
  comp->Canonicalize();
  EXPECT_THAT(x->users(), testing::ElementsAre(comp->root()));
  EXPECT_THAT(y->users(), testing::ElementsAre(b, b));
  ASSERT_TRUE(Verify(**m).ok());
}

TEST(Builder, InfersShapes) {
  auto m = SampleModule();
  ASSERT_TRUE(Verify(*m).ok()) << Verify(*m);
  EXPECT_EQ(m->entry()->root()->shape().ToString(), "(f32[1,1]{1,0}, s32[1,6]{1,0}, s16[3]{0})");
}

// Names stay unique however they were taken: suffixes go on from the last
// one a base got, past any a caller claimed.
TEST(Module, UniqueNamesSkipClaimedSuffixes) {
  Module m("names");
  EXPECT_EQ(m.UniqueName("a"), "a");
  m.NoteNameUsed("a.2");
  EXPECT_EQ(m.UniqueName("a"), "a.1");
  EXPECT_EQ(m.UniqueName("a"), "a.3");
  EXPECT_EQ(m.UniqueName("a.1"), "a.1.1");
  EXPECT_EQ(m.UniqueName("9x"), "v9x");
  EXPECT_EQ(m.UniqueName("9x"), "v9x.1");
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(seen.insert(m.UniqueName("n")).second);
}

TEST(Builder, RecordsFirstError) {
  Module m("bad");
  Builder b(&m, "main");
  auto* x = b.Parameter(0, Shape(F32, {2, 3}), "x");
  auto* y = b.Parameter(1, Shape(F32, {3, 2}), "y");
  auto* bad = b.Binary(Opcode::kAdd, x, y);
  EXPECT_EQ(bad, nullptr);
  EXPECT_EQ(b.Unary(Opcode::kNegate, bad), nullptr);
  EXPECT_FALSE(b.status().ok());
  EXPECT_NE(b.status().message().find("add operands differ"), std::string::npos) << b.status();
  EXPECT_FALSE(b.Build(x).ok());
}

TEST(Printer, PrintsXlaSyntax) {
  auto m = SampleModule();
  std::string text = ToText(*m);
  EXPECT_NE(text.find("HloModule sample"), std::string::npos);
  EXPECT_NE(text.find("ENTRY main"), std::string::npos);
  EXPECT_NE(text.find("f32[1,3,5,5]{3,2,1,0} convolution(input, constant), window={size=3x3 pad=1_1x1_1}, "
                      "dim_labels=bf01_oi01->bf01, metadata={op_type=\"Conv\" op_name=\"conv_1\"}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("to_apply=add_f32"), std::string::npos);
  EXPECT_NE(text.find("padding=0_0x1_2_1"), std::string::npos);
  EXPECT_NE(text.find("slice={[0:1], [1:3]}"), std::string::npos);
}

// ONNX names need not be UTF-8; the proto's strings must be (proto3): bytes
// that start no valid sequence become U+FFFD, valid text is kept.
TEST(ProtoCodec, NamesBecomeValidUtf8) {
  auto m = std::make_unique<Module>("bad\xffname");
  Builder b(m.get(), "main");
  b.set_metadata({.op_type = "Conv\xc0\x80", .op_name = "caf\xc3\xa9 \xe6\x97\xa5 \xed\xa0\x80 end\xe2\x82"});
  auto* x = b.Parameter(0, Shape(F32, {2}), "in\xfe");
  auto* y = b.Unary(Opcode::kNegate, x);
  auto c = b.Build(y);
  ASSERT_TRUE(c.ok()) << c.status();
  m->set_entry(*c);
  auto back = ParseModule(SerializeModule(*m));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ((*back)->name(), "bad\xef\xbf\xbdname");
  const Instruction* neg = (*back)->entry()->root();
  EXPECT_EQ(neg->metadata.op_type, "Conv\xef\xbf\xbd\xef\xbf\xbd");  // an overlong NUL is two bad bytes
  // é and 日 are kept; a surrogate's three bytes and a cut sequence are not.
  EXPECT_EQ(neg->metadata.op_name,
            "caf\xc3\xa9 \xe6\x97\xa5 \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd end\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(neg->operand(0)->name(), "in_");  // the builder keeps instruction names to identifiers
}

// Dimension numbers out of range or repeated are an error, not a read out
// of bounds (a fuzzing finding in the plugin's decoder).
TEST(ShapeInference, ConvolutionDimensionNumbersMustBePermutations) {
  auto m = std::make_unique<Module>("conv");
  Builder b(m.get(), "main");
  auto* x = b.Parameter(0, Shape(F32, {1, 2, 5, 5}), "x");
  auto* w = b.Parameter(1, Shape(F32, {3, 2, 3, 3}), "w");
  Window win;
  win.dimensions.resize(2, WindowDimension{3, 1, 0, 0, 1, 1, false});
  ConvolutionDimensionNumbers dn;
  dn.input_spatial_dimensions = {2, 3};
  dn.kernel_spatial_dimensions = {2, 3};
  dn.output_spatial_dimensions = {2, 3};
  EXPECT_NE(b.Convolution(x, w, win, dn, 1), nullptr);
  for (auto broken : {std::vector<int64_t>{2, 9}, std::vector<int64_t>{2, 2}, std::vector<int64_t>{-1, 3}}) {
    ConvolutionDimensionNumbers bad = dn;
    bad.input_spatial_dimensions = broken;
    Builder b2(m.get(), "bad");
    auto* x2 = b2.Parameter(0, Shape(F32, {1, 2, 5, 5}), "x");
    auto* w2 = b2.Parameter(1, Shape(F32, {3, 2, 3, 3}), "w");
    EXPECT_EQ(b2.Convolution(x2, w2, win, bad, 1), nullptr);
    EXPECT_THAT(std::string(b2.status().message()), ::testing::HasSubstr("dimension numbers"));
  }
}

TEST(ProtoCodec, RoundTripsToIdenticalText) {
  auto m = SampleModule();
  std::string bytes = SerializeModule(*m);
  auto back = ParseModule(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  PrintOptions all;
  all.max_constant_elements = -1;
  EXPECT_EQ(ToText(**back, all), ToText(*m, all));
  wire::HloModuleProto p = ToProto(*m);
  EXPECT_TRUE(p.has_host_program_shape());
  EXPECT_EQ(p.host_program_shape().parameter_names_size(), 1);
  EXPECT_EQ(p.computations(0).name(), "add_f32");  // callees first
  EXPECT_EQ(p.computations(1).name(), "main");
}

// Aliases (a donated parameter's buffer reused by a result) reach the
// proto as XLA reads them, come back from it, survive a clone, and are
// refused when the shapes differ or a parameter is named twice.
TEST(ProtoCodec, AliasesRoundTripAndAreVerified) {
  auto m = std::make_unique<Module>("aliased");
  Builder b(m.get(), "main");
  auto* cache = b.Parameter(0, Shape(F32, {2, 8}), "cache");
  auto* step = b.Parameter(1, Shape(F32, {2, 8}), "step");
  auto* sum = b.Binary(Opcode::kAdd, cache, step);
  auto c = b.Build(b.Tuple({sum, b.Slice(sum, {0, 0}, {2, 1}, {1, 1})}));
  ASSERT_TRUE(c.ok()) << c.status();
  m->set_entry(*c);
  m->set_aliases({{0, 0}});
  ASSERT_TRUE(Verify(*m).ok());
  wire::HloModuleProto p = ToProto(*m);
  ASSERT_EQ(p.input_output_alias().entries_size(), 1);
  const auto& e = p.input_output_alias().entries(0);
  EXPECT_EQ(e.output_shape_index_size(), 1);
  EXPECT_EQ(e.output_shape_index(0), 0);
  EXPECT_EQ(e.parameter_number(), 0);
  EXPECT_EQ(e.kind(), 1);  // may alias
  auto back = ParseModule(SerializeModule(*m));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ((*back)->aliases(), m->aliases());
  EXPECT_EQ(m->Clone()->aliases(), m->aliases());
  m->set_aliases({{1, 1}});  // a [2, 1] result for a [2, 8] parameter
  EXPECT_THAT(std::string(Verify(*m).message()), ::testing::HasSubstr("shapes"));
  m->set_aliases({{0, 0}, {0, 1}});
  EXPECT_THAT(std::string(Verify(*m).message()), ::testing::HasSubstr("once"));
  m->set_aliases({{0, 2}});
  EXPECT_THAT(std::string(Verify(*m).message()), ::testing::HasSubstr("out of range"));
}

// Frontend attributes reach the proto's field 68 as a map, come back from
// it and from the printed text (quotes and backslashes escaped), survive a
// clone, and keep two otherwise equal instructions apart.
TEST(ProtoCodec, FrontendAttributesRoundTrip) {
  auto m = std::make_unique<Module>("attributed");
  Builder b(m.get(), "main");
  auto* x = b.Parameter(0, Shape(F32, {2, 3}), "x");
  auto* w = b.Parameter(1, Shape(F32, {4, 3}), "w");
  DotDimensionNumbers dn;
  dn.lhs_contracting_dimensions = {1};
  dn.rhs_contracting_dimensions = {1};
  auto* dot = b.Dot(x, w, dn);
  dot->frontend_attributes = {{kInt8ActivationsAttribute, "true"}, {"note", "a \"quoted\" \\ value, with commas"}};
  auto c = b.Build(dot);
  ASSERT_TRUE(c.ok()) << c.status();
  m->set_entry(*c);
  wire::HloModuleProto p = ToProto(*m);
  const wire::HloInstructionProto* written = nullptr;
  for (const auto& ip : p.computations(0).instructions())
    if (ip.opcode() == "dot") written = &ip;
  ASSERT_NE(written, nullptr);
  EXPECT_EQ(written->frontend_attributes().map().at(kInt8ActivationsAttribute), "true");
  auto back = ParseModule(SerializeModule(*m));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ((*back)->entry()->root()->frontend_attributes, dot->frontend_attributes);
  EXPECT_EQ(m->Clone()->entry()->root()->frontend_attributes, dot->frontend_attributes);
  PrintOptions all;
  std::string text = ToText(*m, all);
  EXPECT_THAT(text, ::testing::HasSubstr("frontend_attributes={"));
  auto parsed = ParseText(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  EXPECT_EQ((*parsed)->entry()->root()->frontend_attributes, dot->frontend_attributes);
  Instruction plain(*dot);
  plain.frontend_attributes.clear();
  EXPECT_FALSE(plain.SameAttributes(*dot));
}

TEST(Parser, RoundTripsPrintedText) {
  auto m = SampleModule();
  PrintOptions all;
  all.max_constant_elements = -1;
  std::string text = ToText(*m, all);
  auto back = ParseText(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ToText(**back, all), text);
}

TEST(Parser, ReadsControlFlowAndReportsErrors) {
  const char* text = R"(HloModule loop

body {
  i = s32[] parameter(0)
  two = s32[] constant(2)
  ROOT next = s32[] multiply(i, two)
}

cond {
  j = s32[] parameter(0)
  ten = s32[] constant(10)
  ROOT lt = pred[] compare(j, ten), direction=LT
}

ENTRY main {
  x = s32[] parameter(0)
  ROOT w = s32[] while(x), condition=cond, body=body
}
)";
  auto m = ParseText(text);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(ToText(**m), text);
  auto bad = ParseText("HloModule m\n\nENTRY main {\n  ROOT y = f32[2]{0} negate(x)\n}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("line 4: operand 'x' of 'y' is not defined"), std::string::npos)
      << bad.status();
  EXPECT_FALSE(ParseText("HloModule m\nENTRY main {\n  ROOT y = f32[2]{0} frob()\n}\n").ok());
}

TEST(ProtoCodec, RejectsCorruptPrograms) {
  auto m = SampleModule();
  wire::HloModuleProto p = ToProto(*m);
  auto unknown = p;
  unknown.mutable_computations(1)->mutable_instructions(1)->set_opcode("frobnicate");
  EXPECT_EQ(FromProto(unknown).status().code(), absl::StatusCode::kUnimplemented);
  auto bad_shape = p;
  bad_shape.mutable_computations(1)->mutable_instructions(2)->mutable_shape()->set_dimensions(0, 7);
  EXPECT_FALSE(FromProto(bad_shape).ok());
  auto dangling = p;
  dangling.mutable_computations(1)->mutable_instructions(2)->set_operand_ids(0, 9999);
  EXPECT_FALSE(FromProto(dangling).ok());
  EXPECT_FALSE(ParseModule("\xff\xff garbage").ok());
}

TEST(Literal, ConvertsWithHloSemantics) {
  Literal f = Literal::Vector<float>({-1.7f, 2.5f, 1e10f, std::nanf("")});
  Literal i = f.Convert(S32);
  EXPECT_EQ(i.ToInt64Vector(), (std::vector<int64_t>{-1, 2, 2147483647, 0}));
  EXPECT_EQ(Literal::Vector<int32_t>({1, 2, 3, 4}).Reshape({2, 2}).ValuesToString(), "{{1, 2}, {3, 4}}");
}

TEST(Literal, FloatsReadAsIntegersSaturate) {
  // Out-of-range floats read where an integer is wanted (TopK's k, say)
  // clamp, and NaN is 0, as XLA converts (a UBSan finding of the model fuzz
  // target: the plain cast is undefined).
  Literal f = Literal::Vector<float>({3.1e34f, -3.1e34f, std::nanf(""), 7.9f, -2.5f});
  EXPECT_EQ(f.ToInt64Vector(),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), 0, 7, -2}));
}

TEST(Literal, EmptyLiteralsCompareWithoutTouchingTheirData) {
  // Their data is null, which memcmp must not see (a UBSan finding of the
  // model fuzz target).
  Literal a(Shape(F32, {0, 3})), b(Shape(F32, {0, 3}));
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a == Literal(Shape(F32, {1, 3})));
}

// A borrowed literal reads its owner's bytes in place (copies too) and takes
// a private copy on its first write, leaving the owner's bytes as they were.
TEST(Literal, BorrowsUntilWritten) {
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4});
  Literal l = Literal::Borrow(Shape(F32, {2, 2}), owner->data(), owner);
  EXPECT_TRUE(l.borrowed());
  EXPECT_EQ(l.owner().get(), owner.get());
  EXPECT_EQ(l.size_bytes(), 16u);
  EXPECT_EQ(std::as_const(l).untyped_data(), owner->data());
  EXPECT_EQ(l.ValuesToString(), "{{1, 2}, {3, 4}}");
  EXPECT_TRUE(l == Literal::Vector<float>({1, 2, 3, 4}).Reshape({2, 2}));

  Literal copy = l;
  EXPECT_EQ(std::as_const(copy).untyped_data(), owner->data());
  Literal reshaped = l.Reshape({4});
  EXPECT_EQ(std::as_const(reshaped).untyped_data(), owner->data());

  copy.data<float>()[0] = 9;  // the first write copies
  EXPECT_FALSE(copy.borrowed());
  EXPECT_NE(std::as_const(copy).untyped_data(), owner->data());
  EXPECT_EQ(copy.ValuesToString(), "{{9, 2}, {3, 4}}");
  EXPECT_EQ((*owner)[0], 1);
  EXPECT_EQ(l.ValuesToString(), "{{1, 2}, {3, 4}}");

  // The literal keeps the bytes alive without the caller's reference.
  std::weak_ptr<std::vector<float>> watch = owner;
  owner.reset();
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(l.GetAsDouble(3), 4);
  Literal moved = std::move(l);
  EXPECT_EQ(moved.GetAsDouble(3), 4);
  l = Literal();
  moved = Literal();
  reshaped = Literal();
  EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace xonnx::hlo
