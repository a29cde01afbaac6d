// Trains a small convolutional network on synthetic images with xonnx's
// program API: the loss is traced from C++, differentiated (ValueAndGrad),
// and a whole SGD step (forward, backward, update) is one compiled program.
//
//   build/bin/train_cnn [--steps 400] [--batch 64] [--lr 0.1] [--plugin PATH]
//                       [--min-accuracy A]
//
// The images (16x16, one channel) show a bright bar, horizontal, vertical or
// diagonal, at a random place, in noise; the label is the bar's direction.
// It prints the loss as it trains, then the accuracy on 1024 new images and
// the median time per step. examples/train_cnn_torch.py is the same network,
// data and update in PyTorch.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "xonnx/program.h"

namespace {

using namespace xonnx;           // NOLINT: an example
using namespace xonnx::program;  // NOLINT

constexpr int kSize = 16, kClasses = 3;

// `n` images and their labels.
void MakeData(int n, std::mt19937& rng, Tensor* images, Tensor* labels) {
  *images = Tensor(DataType::kFloat32, {n, 1, kSize, kSize});
  *labels = Tensor(DataType::kInt32, {n});
  std::normal_distribution<float> noise(0.f, 0.3f);
  std::uniform_int_distribution<int> pos(2, kSize - 3), cls(0, kClasses - 1);
  float* px = images->data_as<float>();
  for (int i = 0; i < n; ++i) {
    int c = cls(rng), at = pos(rng);
    labels->data_as<int32_t>()[i] = c;
    for (int y = 0; y < kSize; ++y)
      for (int x = 0; x < kSize; ++x) {
        bool on = c == 0 ? y == at : c == 1 ? x == at : (x - y) == at - kSize / 2;
        px[(i * kSize + y) * kSize + x] = (on ? 1.f : 0.f) + noise(rng);
      }
  }
}

// The network's weights: two convolutions and a dense layer.
const std::vector<Spec> kWeights = {{DataType::kFloat32, {8, 1, 3, 3}},  {DataType::kFloat32, {8}},
                                    {DataType::kFloat32, {16, 8, 3, 3}}, {DataType::kFloat32, {16}},
                                    {DataType::kFloat32, {256, 3}},      {DataType::kFloat32, {3}}};

Value Logits(const Value& images, const std::vector<Value>& w) {
  Conv2DOptions same;
  same.padding = {1, 1, 1, 1};
  Value h = Relu(Conv2D(images, w[0], same) + Reshape(w[1], {1, 8, 1, 1}));  // [N, 8, 16, 16]
  h = AvgPool2D(h, 2, 2);                                                    // [N, 8, 8, 8]
  Conv2DOptions down = same;
  down.strides = {2, 2};
  h = Relu(Conv2D(h, w[2], down) + Reshape(w[3], {1, 16, 1, 1}));  // [N, 16, 4, 4]
  return MatMul(Reshape(h, {images.dims()[0], 256}), w[4]) + w[5];
}

// Inputs: images, labels, then the weights; the mean cross-entropy.
std::vector<Value> Loss(const std::vector<Value>& in) {
  std::vector<Value> w(in.begin() + 2, in.end());
  Value logp = LogSoftmax(Logits(in[0], w), 1);
  return {Mean(-Sum(logp * OneHot(in[1], kClasses), {1}))};
}

int Fail(const Status& s) {
  std::fprintf(stderr, "train_cnn: %s\n", s.message().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 400, batch = 64;
  double lr = 0.1, min_accuracy = 0;
  SessionOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: train_cnn [--steps 400] [--batch 64] [--lr 0.1] [--plugin PATH] [--min-accuracy A]\n"
          "Trains a small CNN on synthetic 16x16 images with xonnx's program API; exits 1 when\n"
          "the accuracy on new images is below A.\n");
      return 0;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "train_cnn: %s needs a value\n", a.c_str());
      return 2;
    }
    std::string v = argv[++i];
    if (a == "--steps") {
      steps = std::atoi(v.c_str());
    } else if (a == "--batch") {
      batch = std::atoi(v.c_str());
    } else if (a == "--lr") {
      lr = std::atof(v.c_str());
    } else if (a == "--min-accuracy") {
      min_accuracy = std::atof(v.c_str());
    } else if (a == "--plugin") {
      options.plugin = v;
    } else {
      std::fprintf(stderr, "train_cnn: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  if (steps < 1 || batch < 1) {
    std::fprintf(stderr, "train_cnn: --steps and --batch must be positive\n");
    return 2;
  }
  // One training step: the loss and its gradient with respect to every
  // weight (ValueAndGrad of the traced loss, called inside the step's own
  // trace), then w - lr * dw. Returns the loss and the new weights.
  auto step = Jit::Of(
      [&](const std::vector<Spec>& specs) -> StatusOr<Program> {
        StatusOr<Program> loss = Program::Trace(Loss, specs, "loss");
        if (!loss.ok()) return loss.status();
        StatusOr<Program> vg = ValueAndGrad(*loss, {2, 3, 4, 5, 6, 7});
        if (!vg.ok()) return vg.status();
        return Program::Trace(
            [&](const std::vector<Value>& in) {
              std::vector<Value> r = (*vg)(in);
              std::vector<Value> out = {r[0]};
              for (size_t k = 0; k < kWeights.size(); ++k) out.push_back(in[2 + k] - r[1 + k] * lr);
              return out;
            },
            specs, "sgd_step");
      },
      options);
  if (!step.ok()) return Fail(step.status());
  auto predict = Jit::OfFunction(
      [](const std::vector<Value>& in) {
        std::vector<Value> w(in.begin() + 1, in.end());
        return std::vector<Value>{Logits(in[0], w)};
      },
      options, "predict");
  if (!predict.ok()) return Fail(predict.status());

  std::mt19937 rng(42);
  std::vector<Tensor> weights;
  for (const Spec& s : kWeights) {
    Tensor t(s.dtype, s.dims);
    int64_t fan_in = s.dims.size() == 4 ? s.dims[1] * 9 : s.dims[0];
    std::normal_distribution<float> init(0.f, s.dims.size() == 1 ? 0.f : std::sqrt(2.f / fan_in));
    for (int64_t k = 0; k < t.element_count(); ++k) t.data_as<float>()[k] = init(rng);
    weights.push_back(t);
  }
  // The weights stay on the device from one step to the next; each step
  // uploads its batch and reads its loss back.
  std::vector<DeviceValue> on_device;
  for (const Tensor& w : weights) {
    auto d = step->Upload(w);
    if (!d.ok()) return Fail(d.status());
    on_device.push_back(*d);
  }
  std::vector<double> ms;
  float first = 0, last = 0;
  for (int s = 0; s < steps; ++s) {
    Tensor images, labels;
    MakeData(batch, rng, &images, &labels);
    auto t0 = std::chrono::steady_clock::now();
    auto x = step->Upload(images);
    auto y = step->Upload(labels);
    if (!x.ok() || !y.ok()) return Fail(x.ok() ? y.status() : x.status());
    std::vector<DeviceValue> in = {*x, *y};
    in.insert(in.end(), on_device.begin(), on_device.end());
    auto out = step->RunOnDevice(in);
    if (!out.ok()) return Fail(out.status());
    auto loss = (*out)[0].ToHost();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (!loss.ok()) return Fail(loss.status());
    last = loss->data_as<float>()[0];
    if (s == 0) first = last;
    if (s % 50 == 0 || s == steps - 1) std::printf("step %4d  loss %.4f\n", s, last);
    on_device.assign(out->begin() + 1, out->end());
  }
  for (size_t k = 0; k < weights.size(); ++k) {
    auto w = on_device[k].ToHost();
    if (!w.ok()) return Fail(w.status());
    weights[k] = *w;
  }
  Tensor images, labels;
  MakeData(1024, rng, &images, &labels);
  std::vector<Tensor> in = {images};
  in.insert(in.end(), weights.begin(), weights.end());
  auto logits = predict->Run(in);
  if (!logits.ok()) return Fail(logits.status());
  int right = 0;
  const float* l = (*logits)[0].data_as<float>();
  for (int i = 0; i < 1024; ++i)
    right +=
        std::max_element(l + i * kClasses, l + (i + 1) * kClasses) - (l + i * kClasses) == labels.data_as<int32_t>()[i];
  // The first step compiles; the median is over the rest.
  std::vector<double> timed(ms.begin() + (ms.size() > 1), ms.end());
  std::nth_element(timed.begin(), timed.begin() + timed.size() / 2, timed.end());
  std::printf("loss %.4f -> %.4f; accuracy %.3f on 1024 new images; %.3f ms per step (median; batch %d)\n", first, last,
              right / 1024.0, timed[timed.size() / 2], batch);
  return right / 1024.0 >= min_accuracy ? 0 : 1;
}
