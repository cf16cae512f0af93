// Worker creation and destruction, counters, Wake(), status mapping.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <ucs/config/global_opts.h>

#include "net/internal.h"

namespace pulse::net {
namespace {

// Every endpoint uses error-handling mode PEER, under which UCX 1.13 leaves
// out its shared-memory transports unless these are set: between processes
// of one host that costs ~5x in latency (TCP loopback instead of shared
// memory).  Set them, unless the user did, before main() runs, while the
// process has a single thread (setenv is not thread-safe).  A dead peer is
// still reported promptly, through the handshake's TCP connection (link.cc).
// When a Worker is restricted to other transports (UCX_TLS=tcp) UCX would
// then warn on stdout that these two are unused; unless the user asked for
// that warning explicitly, switch it off (libucs has parsed its global
// options before this runs, so only the parsed value can be changed).
[[gnu::constructor]] void EnableSharedMemoryErrorHandling() {
  if (getenv("UCX_POSIX_ERROR_HANDLING") != nullptr ||
      getenv("UCX_SYSV_ERROR_HANDLING") != nullptr) {
    return;
  }
  setenv("UCX_POSIX_ERROR_HANDLING", "y", /*overwrite=*/0);
  setenv("UCX_SYSV_ERROR_HANDLING", "y", /*overwrite=*/0);
  if (getenv("UCX_WARN_UNUSED_ENV_VARS") == nullptr) ucs_global_opts.warn_unused_env_vars = 0;
}

}  // namespace

Status FromUcs(ucs_status_t status, const std::string& what) {
  std::string msg = what + ": " + ucs_status_string(status);
  switch (status) {
    case UCS_OK:
      return Status::Ok();
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_CANCELED:
    case UCS_ERR_SOME_CONNECTS_FAILED:
      return Status::Unavailable(std::move(msg));
    case UCS_ERR_TIMED_OUT:
      return Status::Timeout(std::move(msg));
    case UCS_ERR_NO_MEMORY:
    case UCS_ERR_EXCEEDS_LIMIT:
    case UCS_ERR_NO_RESOURCE:
      return Status::ResourceExhausted(std::move(msg));
    case UCS_ERR_INVALID_PARAM:
    case UCS_ERR_INVALID_ADDR:
    case UCS_ERR_UNSUPPORTED:
      return Status::InvalidArgument(std::move(msg));
    case UCS_ERR_BUSY:
    case UCS_ERR_IO_ERROR:
      return Status::IoError(std::move(msg));
    default:
      return Status::Internal(std::move(msg));
  }
}

std::string MicrosText(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(d).count()) + " us";
}

Status Worker::Impl::CheckBlockingAllowed(const char* what) const {
  if (callback_depth > 0) {
    return Status::InvalidArgument(std::string(what) +
                                   ": blocking call from inside a pulse::net handler");
  }
  return Status::Ok();
}

Result<std::unique_ptr<Worker>> Worker::Create(const WorkerOptions& options) {
  if (options.awaiting_poll_window_us > kMaxAwaitingPollWindowUs) {
    return Status::InvalidArgument("WorkerOptions::awaiting_poll_window_us " +
                                   std::to_string(options.awaiting_poll_window_us) + " exceeds " +
                                   std::to_string(kMaxAwaitingPollWindowUs));
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->regions = std::make_shared<RegionTable>();

  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return FromUcs(st, "ucp_config_read");
  Status bad;
  if (!options.transports.empty()) {
    st = ucp_config_modify(config, "TLS", options.transports.c_str());
    if (st != UCS_OK) bad = FromUcs(st, "UCX setting TLS=" + options.transports);
  }
  for (const auto& [name, value] : options.ucx_config) {
    if (!bad.ok()) break;
    st = ucp_config_modify(config, name.c_str(), value.c_str());
    if (st != UCS_OK) bad = FromUcs(st, "UCX setting " + name + "=" + value);
  }
  if (bad.ok() && !options.ucx_config.empty()) {
    // ucp_config_modify keeps names it does not know (transport settings)
    // and UCX later ignores them with a warning: refuse them here.
    char* buf = nullptr;
    size_t size = 0;
    FILE* f = open_memstream(&buf, &size);
    if (f != nullptr) {
      ucp_config_print(config, f, nullptr, UCS_CONFIG_PRINT_CONFIG);
      std::fclose(f);
      std::string printed = "\n" + std::string(buf, size);
      std::free(buf);
      for (const auto& [name, value] : options.ucx_config) {
        if (printed.find("\nUCX_" + name + "=") == std::string::npos) {
          bad = Status::InvalidArgument("UCX setting " + name +
                                        " is not a UCP context setting; transport settings "
                                        "must be set as UCX_" + name + " in the environment");
          break;
        }
      }
    }
  }
  if (!bad.ok()) {
    ucp_config_release(config);
    return bad;
  }

  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;
  params.name = impl->options.name.c_str();
  st = ucp_init(&params, config, &impl->context);
  ucp_config_release(config);
  if (st != UCS_OK) return FromUcs(st, "ucp_init");

  ucp_worker_params_t wparams{};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
  st = ucp_worker_create(impl->context, &wparams, &impl->worker);
  if (st != UCS_OK) {
    ucp_cleanup(impl->context);
    return FromUcs(st, "ucp_worker_create");
  }
  st = ucp_worker_get_efd(impl->worker, &impl->efd);
  if (st != UCS_OK) {
    ucp_worker_destroy(impl->worker);
    ucp_cleanup(impl->context);
    return FromUcs(st, "ucp_worker_get_efd");
  }
  Status hs = impl->SetUpFaults();
  if (hs.ok()) hs = impl->SetUpLinks();
  if (hs.ok()) hs = impl->InstallAmHandlers();
  if (!hs.ok()) {
    ucp_worker_destroy(impl->worker);
    ucp_cleanup(impl->context);
    return hs;
  }
  impl->last_activity = Clock::now();
  return std::unique_ptr<Worker>(new Worker(std::move(impl)));
}

Worker::Worker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Worker::~Worker() {
  Impl& m = *impl_;
  m.destroying = true;
  m.callback_depth = 0;
  StopListening();
  m.ReleaseHeld(kInvalidEndpoint, /*all=*/true);  // FaultInjection: held, not lost
  // Flush every live endpoint briefly so that what was sent arrives, then
  // close all by force.
  std::vector<Op*> flushes;
  for (auto& [id, e] : m.eps) {
    if (e->state != EpState::kReady || e->ep == nullptr) continue;
    Status immediate;
    Op* op = m.StartFlush(e.get(), &immediate);
    if (op != nullptr) flushes.push_back(op);
  }
  (void)m.RunUntil(
      [&flushes] {
        for (Op* op : flushes) {
          if (!op->finished) return false;
        }
        return true;
      },
      Clock::now() + std::chrono::milliseconds(200));
  for (Op* op : flushes) {
    if (op->finished) {
      delete op;
    } else {
      op->abandoned = true;
    }
  }
  for (auto& [id, e] : m.eps) {
    if (e->ep != nullptr) {
      m.ForceClose(e->ep);
      e->ep = nullptr;
    }
  }
  for (ucp_ep_h ep : m.deferred_closes) m.ForceClose(ep);
  m.deferred_closes.clear();
  m.CloseAllLinks();
  std::vector<EndpointId> ids;
  for (auto& [id, e] : m.eps) ids.push_back(id);
  for (EndpointId id : ids) m.FailSwOps(id, Status::Unavailable("worker destroyed"));
  (void)m.RunUntil([&m] { return m.closing.empty() && m.inflight == 0; },
                   Clock::now() + std::chrono::seconds(2));
  if (m.inflight != 0 || !m.closing.empty()) {
    std::fprintf(stderr, "pulse::net: worker %s destroyed with %zu requests in flight\n",
                 m.options.name.c_str(), m.inflight + m.closing.size());
  }
  for (void* req : m.closing) ucp_request_free(req);
  m.closing.clear();
  m.eps.clear();
  ucp_worker_destroy(m.worker);
  ucp_cleanup(m.context);
}

void Worker::Wake() {
  impl_->wake_pending.store(true, std::memory_order_release);
  (void)ucp_worker_signal(impl_->worker);
}

const Counters& Worker::counters() const { return impl_->counters; }
const WorkerOptions& Worker::options() const { return impl_->options; }

void Worker::SetPollMode(PollMode mode, uint32_t poll_window_us) {
  impl_->options.poll_mode = mode;
  impl_->options.poll_window_us = poll_window_us;
}

void Worker::SetAwaitingReplies(bool awaiting) { impl_->awaiting_replies = awaiting; }
void Worker::NoteActivity() { impl_->NoteActivity(); }

size_t Worker::endpoint_count() const { return impl_->eps.size(); }

size_t Worker::held_inbound() const {
  size_t n = 0;
  for (const auto& [id, e] : impl_->eps) n += e->inbound.size();
  return n;
}

std::string EndpointInfo(ucp_ep_h ep) {
  char* buf = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&buf, &size);
  if (f == nullptr) return std::string();
  ucp_ep_print_info(ep, f);
  std::fclose(f);
  std::string out(buf, size);
  std::free(buf);
  return out;
}

Result<std::string> Worker::DescribeEndpoint(EndpointId id) const {
  Endpoint* e = impl_->Find(id);
  if (e == nullptr) return Status::NotFound("endpoint " + std::to_string(id));
  if (e->ep == nullptr) return Status::Unavailable("endpoint " + std::to_string(id) + " has failed");
  return EndpointInfo(e->ep);
}

Result<bool> Worker::UsesUcxRma(EndpointId id) const {
  Endpoint* e = impl_->Find(id);
  if (e == nullptr) return Status::NotFound("endpoint " + std::to_string(id));
  if (e->ep == nullptr) return Status::Unavailable("endpoint " + std::to_string(id) + " has failed");
  return impl_->UseUcxRma(e);
}

}  // namespace pulse::net
