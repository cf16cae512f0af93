// The systems `pulse bench app --system S` can run an application on
// (pulse::apps::AppSystem), and how to add one.
//
// To add a system: write src/bench/app_system_<name>.cc with a factory
//   Result<std::unique_ptr<apps::AppSystem>> Make<Name>System(const AppSystemConfig&);
// declare it below, add the file to src/bench/CMakeLists.txt, and add one
// line {"<name>", "<description>", Make<Name>System} to the table in
// src/bench/app_systems.cc.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pulse/apps/app_system.h"
#include "pulse/client.h"
#include "pulse/status.h"

namespace pulse::bench {

// What a system is built from.
struct AppSystemConfig {
  ClientOptions client;  // switch address, transport and polling already set
  std::optional<ExecutionMode> mode;  // --mode: where traversals run (unset: the dispatch rule)
  uint64_t working_set_bytes = 0;     // the application's far data (e.g. to size a cache)
  uint32_t memory_nodes = 0;
};

using AppSystemFactory = Result<std::unique_ptr<apps::AppSystem>> (*)(const AppSystemConfig&);

struct AppSystemEntry {
  const char* name;
  const char* description;
  AppSystemFactory make;
};

// Every registered system, in the order --help lists them.
const std::vector<AppSystemEntry>& AppSystems();
// The system called `name`, connected.  InvalidArgument naming the known
// systems for an unknown name; the factory's errors otherwise.
Result<std::unique_ptr<apps::AppSystem>> MakeAppSystem(const std::string& name, const AppSystemConfig& config);

// src/bench/app_system_pulse.cc
Result<std::unique_ptr<apps::AppSystem>> MakePulseSystem(const AppSystemConfig& config);
Result<std::unique_ptr<apps::AppSystem>> MakePulseAccSystem(const AppSystemConfig& config);

}  // namespace pulse::bench
