// Sorted sets: not yet implemented.
#include "resp/zset.h"

namespace pulse::resp {
namespace {
void NotYet(CommandContext& c) { c.reply->Error("ERR sorted sets are not implemented yet"); }
}  // namespace
void ZAdd(CommandContext& c, const Request&) { NotYet(c); }
void ZRem(CommandContext& c, const Request&) { NotYet(c); }
void ZScore(CommandContext& c, const Request&) { NotYet(c); }
void ZCard(CommandContext& c, const Request&) { NotYet(c); }
void ZCount(CommandContext& c, const Request&) { NotYet(c); }
void ZRank(CommandContext& c, const Request&) { NotYet(c); }
void ZRange(CommandContext& c, const Request&) { NotYet(c); }
void ZRangeByScore(CommandContext& c, const Request&) { NotYet(c); }
Status ZSetDestroy(Client*, const std::string&) { return Status::Ok(); }
}  // namespace pulse::resp
