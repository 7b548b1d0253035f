// safetensors reader: good files, aliases, dtype conversion, and every kind of broken file named in the issue.
#include <gtest/gtest.h>

#include "core/half.h"
#include "core/weights.h"
#include "cubeforge/error.h"
#include "cubeforge/safetensors.h"
#include "test_util.h"

using namespace cubeforge;

namespace {

std::string expect_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected cubeforge::Error";
  return "";
}

class SafetensorsTest : public ::testing::Test {
 protected:
  std::filesystem::path dir = cftest::temp_dir("st");
  std::string file(const std::string& n) { return (dir / n).string(); }
  std::map<std::string, cftest::RawTensor> two() {
    return {{"a.weight", cftest::f32_tensor({2, 3})}, {"b.bias", cftest::f32_tensor({4})}};
  }
};

TEST_F(SafetensorsTest, ReadsGoodFileAndConvertsDtypes) {
  auto t = two();
  cftest::RawTensor bf;
  bf.dtype = "BF16";
  bf.shape = {2};
  uint16_t b[2] = {float_to_bf16(1.5f), float_to_bf16(-2.0f)};
  bf.bytes.assign(reinterpret_cast<char*>(b), 4);
  t["c"] = bf;
  cftest::RawTensor h;
  h.dtype = "F16";
  h.shape = {1};
  uint16_t one = 0x3c00;
  h.bytes.assign(reinterpret_cast<char*>(&one), 2);
  t["d"] = h;
  cftest::RawTensor i;
  i.dtype = "I64";
  i.shape = {2};
  int64_t iv[2] = {7, -3};
  i.bytes.assign(reinterpret_cast<char*>(iv), 16);
  t["e"] = i;
  cftest::write_safetensors(file("good.safetensors"), t);
  auto st = SafeTensors::open(file("good.safetensors"));
  EXPECT_EQ(st.names().size(), 5u);
  auto a = st.to_f32("a.weight", {2, 3});
  EXPECT_FLOAT_EQ(a[1], 0.51f);
  EXPECT_EQ(st.to_f32("c"), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(st.to_f32("d")[0], 1.0f);
  EXPECT_EQ(st.to_i64("e"), (std::vector<int64_t>{7, -3}));
}

TEST_F(SafetensorsTest, HonoursAliasMetadata) {
  cftest::write_safetensors(file("alias.safetensors"), {{"embedder.weight", cftest::f32_tensor({3, 8})}},
                            {{"encoder.embedder.weight", "embedder.weight"}});
  auto st = SafeTensors::open(file("alias.safetensors"));
  EXPECT_TRUE(st.contains("encoder.embedder.weight"));
  EXPECT_EQ(st.to_f32("encoder.embedder.weight"), st.to_f32("embedder.weight"));
  EXPECT_NO_THROW(st.check_keys({"embedder.weight", "encoder.embedder.weight"}));
  EXPECT_NO_THROW(st.check_keys({"encoder.embedder.weight"}));
}

TEST_F(SafetensorsTest, TruncatedFile) {
  std::ofstream(file("t.safetensors")) << "abc";
  auto msg = expect_error([&] { SafeTensors::open(file("t.safetensors")); });
  EXPECT_NE(msg.find("t.safetensors"), std::string::npos);
  EXPECT_NE(msg.find("truncated"), std::string::npos);
}

TEST_F(SafetensorsTest, TruncatedData) {
  cftest::write_safetensors(file("td.safetensors"), two());
  std::filesystem::resize_file(file("td.safetensors"), std::filesystem::file_size(file("td.safetensors")) - 4);
  auto msg = expect_error([&] { SafeTensors::open(file("td.safetensors")); });
  EXPECT_NE(msg.find("out of range"), std::string::npos) << msg;
  EXPECT_NE(msg.find("b.bias"), std::string::npos) << msg;
}

TEST_F(SafetensorsTest, HeaderLengthPastEnd) {
  std::ofstream out(file("h.safetensors"), std::ios::binary);
  uint64_t n = 1000;
  out.write(reinterpret_cast<char*>(&n), 8);
  out << "{}";
  out.close();
  auto msg = expect_error([&] { SafeTensors::open(file("h.safetensors")); });
  EXPECT_NE(msg.find("past the end"), std::string::npos) << msg;
}

TEST_F(SafetensorsTest, MalformedJson) {
  std::ofstream out(file("j.safetensors"), std::ios::binary);
  std::string h = "{\"a\": [1,2";
  uint64_t n = h.size();
  out.write(reinterpret_cast<char*>(&n), 8);
  out << h;
  out.close();
  auto msg = expect_error([&] { SafeTensors::open(file("j.safetensors")); });
  EXPECT_NE(msg.find("malformed JSON"), std::string::npos) << msg;
}

TEST_F(SafetensorsTest, OverlappingOffsets) {
  cftest::write_safetensors(file("o.safetensors"), two(), nullptr, [](nlohmann::json& h) {
    h["b.bias"]["data_offsets"] = {8, 24};
  });
  auto msg = expect_error([&] { SafeTensors::open(file("o.safetensors")); });
  EXPECT_NE(msg.find("overlap"), std::string::npos) << msg;
}

TEST_F(SafetensorsTest, ByteCountMismatch) {
  cftest::write_safetensors(file("b.safetensors"), two(), nullptr,
                            [](nlohmann::json& h) { h["a.weight"]["shape"] = {2, 2}; });
  auto msg = expect_error([&] { SafeTensors::open(file("b.safetensors")); });
  EXPECT_NE(msg.find("a.weight"), std::string::npos);
  EXPECT_NE(msg.find("byte count"), std::string::npos) << msg;
}

TEST_F(SafetensorsTest, UnknownAndSubByteDtype) {
  cftest::write_safetensors(file("d.safetensors"), two(), nullptr,
                            [](nlohmann::json& h) { h["b.bias"]["dtype"] = "Q4"; });
  EXPECT_NE(expect_error([&] { SafeTensors::open(file("d.safetensors")); }).find("unknown dtype 'Q4'"), std::string::npos);
  cftest::write_safetensors(file("f4.safetensors"), two(), nullptr,
                            [](nlohmann::json& h) { h["b.bias"]["dtype"] = "F4"; });
  EXPECT_NE(expect_error([&] { SafeTensors::open(file("f4.safetensors")); }).find("not supported"), std::string::npos);
}

TEST_F(SafetensorsTest, WrongDtypeForUse) {
  cftest::RawTensor i;
  i.dtype = "I32";
  i.shape = {1};
  i.bytes = std::string(4, '\0');
  cftest::write_safetensors(file("w.safetensors"), {{"x", i}});
  auto st = SafeTensors::open(file("w.safetensors"));
  EXPECT_NE(expect_error([&] { st.to_f32("x"); }).find("expected a float type"), std::string::npos);
}

TEST_F(SafetensorsTest, MissingUnexpectedAndShapeMismatch) {
  cftest::write_safetensors(file("m.safetensors"), two());
  auto st = SafeTensors::open(file("m.safetensors"));
  auto msg = expect_error([&] { st.check_keys({"a.weight", "c.weight"}); });
  EXPECT_NE(msg.find("missing tensors: c.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unexpected tensors: b.bias"), std::string::npos) << msg;
  msg = expect_error([&] { WeightStore::load(st, {{"a.weight", {3, 2}}, {"b.bias", {4}}}); });
  EXPECT_NE(msg.find("a.weight"), std::string::npos);
  EXPECT_NE(msg.find("expected [3,2]"), std::string::npos) << msg;
  EXPECT_NE(expect_error([&] { st.info("zzz"); }).find("missing tensor 'zzz'"), std::string::npos);
}

TEST_F(SafetensorsTest, MissingFile) {
  auto msg = expect_error([&] { SafeTensors::open(file("nope.safetensors")); });
  EXPECT_NE(msg.find("nope.safetensors"), std::string::npos);
}

TEST(Bf16, RoundToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125: ties to even (1.0).
  EXPECT_EQ(float_to_bf16(1.00390625f), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.01171875f), 0x3f82);  // halfway, rounds up to even mantissa
}

}  // namespace
