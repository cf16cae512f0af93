// PageBackend is an interface; this file gives the layer's library a source
// until the host agent's sources land.
#include "pulse/farmem/page_backend.h"
