// `pulse bench suite`'s studies of issue 15's applications (seed 002 IV):
//   kv    `pulse bench kv` (pulse::kv::Store over the ring and the message
//         paths, and the rpc / rpc-wimpy baselines), 100% GET and 50/50,
//         uniform keys; its plot is kv.png (scripts/plot_suite.py);
//   dlrm  `pulse bench dlrm` (the offloaded embedding reduction against the
//         CPU node gathering rows one-sidedly); its plot is dlrm.png;
//   tx    `pulse bench tx` (chain-replicated transactions against the
//         HyperLoop-like baseline), one run per shape and value size with
//         both systems side by side; its plot is tx.png.
// Each runs at reduced scale with --quick.  A run that fails is noted in the
// study (never an error of the suite).
// Thread-safety: not meant to run concurrently (each run starts a cluster).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pulse::bench {

struct SuiteAppStudyOptions {
  bool quick = false;
  std::string binary, run_dir;
  std::function<void(const std::string&)> progress;
};

// Each returns the study's section of results.json: {"runs": [<the bench's
// --json, with "label">...], "notes": [<failures>...]}.
nlohmann::json RunSuiteKvStudy(const SuiteAppStudyOptions& options);
nlohmann::json RunSuiteDlrmStudy(const SuiteAppStudyOptions& options);
nlohmann::json RunSuiteTxStudy(const SuiteAppStudyOptions& options);

// The studies' section of report.md (`name` is kv, dlrm or tx).
std::string SuiteAppStudyMarkdown(const std::string& name, const nlohmann::json& study);

}  // namespace pulse::bench
