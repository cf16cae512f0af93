// ReadInputFile / CheckInputFile: what a regular file within the limit holds
// is read exactly; everything else is refused with a message naming the file
// and the reason, and the size limit is exact.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "common/bounded_file.h"

namespace pulse {
namespace {

class BoundedFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/pulse-bounded-file-test.XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir_ = templ;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    return path;
  }

  std::string dir_;
};

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST_F(BoundedFileTest, ReadsExactlyWhatTheFileHoldsUpToTheLimit) {
  std::mt19937 rng(7);
  for (size_t size : {size_t{0}, size_t{1}, size_t{4095}, size_t{65536}, size_t{65537}, size_t{200000}}) {
    std::string bytes(size, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());  // NULs and high bytes included
    const std::string path = Write("f", bytes);
    auto read = ReadInputFile(path, size, "test file");  // exactly at the limit
    ASSERT_TRUE(read.ok()) << size << ": " << read.status().ToString();
    EXPECT_EQ(*read, bytes) << size;
    auto checked = CheckInputFile(path, size, "test file");
    ASSERT_TRUE(checked.ok());
    EXPECT_EQ(*checked, size);
    if (size == 0) continue;
    auto over = ReadInputFile(path, size - 1, "test file");  // one byte over
    ASSERT_FALSE(over.ok()) << size;
    EXPECT_EQ(over.status().code(), Status::Code::kInvalidArgument);
    EXPECT_TRUE(Contains(over.status().message(), "more than the limit of")) << over.status().message();
    EXPECT_TRUE(Contains(over.status().message(), "test file '" + path + "'")) << over.status().message();
  }
}

TEST_F(BoundedFileTest, RefusesWhatIsNoRegularFileNamingIt) {
  ASSERT_EQ(mkfifo((dir_ + "/fifo").c_str(), 0600), 0);
  const struct {
    std::string path;
    const char* kind;
  } cases[] = {{dir_, "a directory"}, {"/dev/zero", "a character device"}, {dir_ + "/fifo", "a pipe"}};
  for (const auto& c : cases) {
    for (const Status& s : {ReadInputFile(c.path, 1 << 20, "program file").status(),
                            CheckInputFile(c.path, 1 << 20, "program file").status()}) {
      EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << c.path;
      EXPECT_EQ(s.message(), "program file '" + c.path + "' is " + c.kind + ", not a regular file");
    }
  }
  const Status missing = ReadInputFile(dir_ + "/missing", 1, "program file").status();
  EXPECT_EQ(missing.code(), Status::Code::kNotFound);
  EXPECT_TRUE(Contains(missing.message(), dir_ + "/missing")) << missing.message();
}

TEST_F(BoundedFileTest, ASymlinkToARegularFileIsFollowed) {
  const std::string target = Write("target", "text");
  ASSERT_EQ(symlink(target.c_str(), (dir_ + "/link").c_str()), 0);
  auto read = ReadInputFile(dir_ + "/link", 16, "config");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, "text");
}

TEST(DescribeBytes, NamesTheUnit) {
  EXPECT_EQ(DescribeBytes(0), "0 B");
  EXPECT_EQ(DescribeBytes(1023), "1023 B");
  EXPECT_EQ(DescribeBytes(1536), "1.5 KiB");
  EXPECT_EQ(DescribeBytes(16ull << 20), "16.0 MiB");
  EXPECT_EQ(DescribeBytes(5ull << 30), "5.0 GiB");
}

}  // namespace
}  // namespace pulse
