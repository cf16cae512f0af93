// The state file of a running cluster: JSON, written atomically (temporary
// file + rename) so a reader never sees half of it.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cluster/launcher.h"
#include "common/bounded_file.h"

namespace pulse::cluster {

using nlohmann::json;

Status WriteState(const ClusterState& state) {
  json nodes = json::array();
  for (const NodeProcess& n : state.nodes)
    nodes.push_back(json{{"name", n.name},
                         {"role", RoleName(n.role)},
                         {"node", n.node},
                         {"address", n.address},
                         {"pid", n.process.pid},
                         {"start_ticks", n.process.start_ticks},
                         {"log", n.log},
                         {"shm_name", n.shm_name},
                         {"instance", n.instance}});
  const json j = {{"name", state.name},
                  {"config", state.config_source},
                  {"switch_address", state.switch_address},
                  {"ucx_tls", state.ucx_tls},
                  {"started_unix", state.started_unix},
                  {"nodes", nodes}};
  const std::string tmp = fmt::format("{}.tmp.{}", state.state_file, getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2) << "\n";
    if (!out.flush()) return Status::IoError(fmt::format("cannot write state file '{}'", tmp));
  }
  if (std::rename(tmp.c_str(), state.state_file.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    return Status::IoError(fmt::format("cannot write state file '{}': {}", state.state_file, strerror(e)));
  }
  return Status::Ok();
}

Result<ClusterState> ReadState(const std::string& path) {
  auto text = ReadInputFile(path, kMaxConfigFileBytes, "cluster state file");
  if (!text.ok()) return text.status();
  const json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string& what) {
    return Status::InvalidArgument(fmt::format("cluster state file '{}': {}", path, what));
  };
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  ClusterState s;
  s.state_file = path;
  try {
    s.name = j.at("name").get<std::string>();
    s.config_source = j.value("config", "");
    s.switch_address = j.at("switch_address").get<std::string>();
    s.ucx_tls = j.value("ucx_tls", "");
    s.started_unix = j.value("started_unix", int64_t{0});
    for (const json& n : j.at("nodes")) {
      NodeProcess p;
      p.name = n.at("name").get<std::string>();
      const std::string role = n.at("role").get<std::string>();
      p.role = role == "switch" ? Role::kSwitch : role == "agent" ? Role::kAgent : Role::kMemNode;
      p.node = n.value("node", 0u);
      p.address = n.at("address").get<std::string>();
      p.process.pid = n.at("pid").get<pid_t>();
      p.process.start_ticks = n.value("start_ticks", uint64_t{0});
      p.log = n.value("log", "");
      p.shm_name = n.value("shm_name", "");
      p.instance = n.value("instance", "");
      s.nodes.push_back(std::move(p));
    }
  } catch (const json::exception& e) {
    return bad(e.what());
  }
  return s;
}

bool AnyRunning(const ClusterState& state) {
  for (const NodeProcess& n : state.nodes)
    if (IsRunning(n.process)) return true;
  return false;
}

}  // namespace pulse::cluster
