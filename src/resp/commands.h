// The command table of `pulse kv serve`: each Redis command's arity and
// handler.  A handler runs one request against the keyspace (inside the
// server's batch, under the keyspace lock when it needs the keyspace) and
// writes its reply.  Internal to src/resp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pulse/resp/keyspace.h"
#include "pulse/resp/parser.h"
#include "pulse/resp/reply.h"

namespace pulse::resp {

// What a handler may read or change besides the keyspace.
struct CommandContext {
  Keyspace* keyspace = nullptr;
  ReplyWriter* reply = nullptr;
  int64_t now_ms = 0;          // the batch's Unix time in ms (expiry)
  int* protocol = nullptr;     // the connection's RESP version (HELLO changes it)
  bool* close_after = nullptr; // QUIT sets it
  uint64_t connection_id = 0;
  std::string (*info)(void* server) = nullptr;  // the server's INFO text
  void* server = nullptr;
};

struct CommandSpec {
  const char* name;     // lower case
  int arity;            // Redis's: n exact, -n at least n (the name included)
  bool keyspace;        // needs the keyspace (and so its lock)
  void (*run)(CommandContext& c, const Request& r);
  int first_key, last_key, step;  // for COMMAND
};

// Helpers shared by the command files.
inline constexpr const char* kWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value";
std::string Lower(std::string_view s);
// Replies "-ERR pulse: <status>" (a far-memory failure).
void FarError(CommandContext& c, const Status& s);
// The value of `key` if it holds a `type` value: *e is its record (nullopt:
// no such key, *value then nullopt too).  On WRONGTYPE or a far error
// replies and returns false.
bool ReadTyped(CommandContext& c, std::string_view key, ValueType type, std::optional<Entry>* e,
               std::optional<std::string>* value);

// The spec of a command name in any case, or nullptr.
const CommandSpec* FindCommand(std::string_view name);
// Runs a request: unknown command and arity errors in Redis's form,
// otherwise the handler.
void Dispatch(CommandContext& c, const Request& r);
// Appends the keys a request names (by its spec's first/last/step) to
// *keys, for Keyspace::Prefetch.  Nothing for unknown or short requests.
void CollectKeys(const Request& r, std::vector<std::string_view>* keys);
// Whether the request needs the keyspace (an unknown or malformed request
// does not: it only gets an error).
bool NeedsKeyspace(const Request& r);

}  // namespace pulse::resp
