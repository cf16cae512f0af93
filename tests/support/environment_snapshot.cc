#include "support/environment_snapshot.h"

#include <cstdlib>

extern char** environ;

namespace pulse::testing {
namespace {

std::vector<std::string> Names() {
  std::vector<std::string> names;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    names.push_back(entry.substr(0, entry.find('=')));
  }
  return names;
}

}  // namespace

EnvironmentSnapshot::EnvironmentSnapshot() {
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) entries_.emplace_back(*e);
}

EnvironmentSnapshot::~EnvironmentSnapshot() {
  // Unset by name and set again by value rather than clearenv(): environ's
  // strings may belong to putenv callers, and setenv copies.
  for (const std::string& name : Names()) unsetenv(name.c_str());
  for (const std::string& entry : entries_) {
    const size_t eq = entry.find('=');
    setenv(entry.substr(0, eq).c_str(), entry.substr(eq + 1).c_str(), /*overwrite=*/1);
  }
}

}  // namespace pulse::testing
