// A fresh directory under /tmp for a graph test's files, removed with
// everything in it when the object goes.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

namespace pulse::graph::testing {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/pulse_graph_test_XXXXXX";
    if (mkdtemp(tmpl) == nullptr) ADD_FAILURE() << "cannot create a directory under /tmp";
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);  // best effort: a leftover directory under /tmp harms nothing
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The path of `name` inside the directory.
  std::string Path(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace pulse::graph::testing
