// Port files: how a node started on port 0 tells its launcher the port.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "cluster/process.h"

namespace pulse::cluster {
namespace {

std::string TempPath(const char* tag) { return "/tmp/pulse-port-file-" + std::to_string(getpid()) + "-" + tag; }

TEST(PortFile, WhatIsWrittenIsRead) {
  const std::string path = TempPath("roundtrip");
  ASSERT_TRUE(WritePortFile(path, 41234).ok());
  auto port = ReadPortFile(path);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  EXPECT_EQ(*port, 41234);
  ASSERT_TRUE(WritePortFile(path, 7100).ok());  // replaces, never appends
  EXPECT_EQ(*ReadPortFile(path), 7100);
  std::remove(path.c_str());
}

TEST(PortFile, MissingIsNotFoundAndGarbageNamesTheFile) {
  const std::string path = TempPath("bad");
  std::remove(path.c_str());
  EXPECT_EQ(ReadPortFile(path).status().code(), Status::Code::kNotFound);
  for (const char* text : {"", "port\n", "0\n", "70000\n"}) {
    std::ofstream(path, std::ios::trunc) << text;
    auto port = ReadPortFile(path);
    ASSERT_FALSE(port.ok()) << "'" << text << "' read as " << *port;
    EXPECT_EQ(port.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(port.status().message().find(path), std::string::npos) << port.status().message();
  }
  std::remove(path.c_str());
}

TEST(PortFile, UnwritableDirectoryIsAnError) {
  EXPECT_FALSE(WritePortFile("/nonexistent-dir-for-pulse/port", 1).ok());
}

}  // namespace
}  // namespace pulse::cluster
