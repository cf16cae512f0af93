// The RPC wire format moved to the protocol layer (the switch routes it):
// protocol/rpc_message.h.  Only src/rpc/rpc_client.cc still includes this
// path; drop this file when its rewrite (the request tracker) lands.
#pragma once

#include "protocol/rpc_message.h"
