// Sorted-set commands of `pulse kv serve` and their far layout (see
// src/resp/zset.cc and docs/resp.md).  Internal to src/resp.
#pragma once

#include <string>

#include "pulse/client.h"
#include "pulse/status.h"
#include "resp/commands.h"

namespace pulse::resp {

void ZAdd(CommandContext& c, const Request& r);
void ZRem(CommandContext& c, const Request& r);
void ZScore(CommandContext& c, const Request& r);
void ZCard(CommandContext& c, const Request& r);
void ZCount(CommandContext& c, const Request& r);
void ZRank(CommandContext& c, const Request& r);
void ZRange(CommandContext& c, const Request& r);
void ZRangeByScore(CommandContext& c, const Request& r);

// Frees the far structures of a sorted set whose record value is `value`.
Status ZSetDestroy(Client* client, const std::string& value);

// Redis's integer parsing (string2ll), shared by the command files.
std::optional<int64_t> ParseRedisInt(std::string_view s);

}  // namespace pulse::resp
