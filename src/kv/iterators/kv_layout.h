/* Far-memory layout of the MICA-style KV store (pulse::kv::Store,
 * include/pulse/kv/store.h; docs/kv.md), shared by the offloaded GET, PUT and
 * DELETE iterators (C, compiled for BPF) and src/kv/store.cc.
 *
 * A bucket is 128 bytes (one window): word 0 the far address of its overflow
 * bucket (0: none), words 1-2 eight 16-bit tags (slot k in word 1 + k/4, bits
 * 16*(k%4); tag 0: the slot is empty), words 3-10 the far addresses of the
 * slots' items.  An item is 8*(1 + key_words + value_words) bytes, at most
 * 128: a header word (key length in bits 0-15, value length in bits 16-31),
 * the key zero-padded to key_words, the value zero-padded to value_words.
 * Every window is read as 16 words, so an item slab and an overflow bucket
 * carry 128 bytes of padding at their end. */
#ifndef PULSE_SRC_KV_ITERATORS_KV_LAYOUT_H_
#define PULSE_SRC_KV_ITERATORS_KV_LAYOUT_H_

#include <pulse/far_ptr.h>

#define PULSE_KV_WINDOW_WORDS 16    /* 128 bytes: a bucket, the largest item */
#define PULSE_KV_SLOTS 8            /* slots per bucket */
#define PULSE_KV_TAG_WORD 1         /* words 1-2: the tags */
#define PULSE_KV_ITEM_WORD 3        /* words 3-10: the items */
#define PULSE_KV_MAX_KEY_WORDS 4    /* keys of up to 32 bytes */
#define PULSE_KV_MAX_REGIONS 4      /* pre-allocated items a PUT may take */

/* A window: a bucket or an item. */
struct pulse_kv_node {
  PULSE_U64 w[PULSE_KV_WINDOW_WORDS];
};

/* Outcomes of the offloaded programs (state.outcome). */
#define PULSE_KV_MISS 0          /* GET/DELETE: no such key */
#define PULSE_KV_HIT 1           /* GET: found (data holds the item); DELETE: removed */
#define PULSE_KV_INSERTED 2      /* PUT: a new item in a free slot */
#define PULSE_KV_INSERTED_OVERFLOW 3 /* PUT: a new item in the spare bucket, now linked */
#define PULSE_KV_UPDATED 4       /* PUT: the key's item overwritten in place */
#define PULSE_KV_NEED_REGION 5   /* PUT: a new key but no region to ALLOC: nothing written */
#define PULSE_KV_NEED_BUCKET 6   /* PUT: a new key, chain full, no spare bucket: nothing written */

/* The state of every KV program (the scratch pad). */
struct pulse_kv_state {
  PULSE_U64 head;        /* in: the key's bucket (chain head) */
  PULSE_U64 tag;         /* in: the key's 16-bit tag (never 0) */
  PULSE_U64 key_words;   /* in */
  PULSE_U64 item_words;  /* in: 1 + key_words + value_words */
  PULSE_U64 bucket;      /* the bucket being scanned */
  PULSE_U64 slot;        /* the next slot of it to test */
  PULSE_U64 phase;       /* 0 at a bucket, 1 at an item, 2 back at a bucket to claim or clear a slot */
  PULSE_U64 next;        /* where next() goes */
  PULSE_U64 outcome;     /* out: PULSE_KV_* */
  PULSE_U64 item;        /* out: the item's far address (hit, insert, update) */
  PULSE_U64 loads;       /* out: windows loaded (memory reads) */
  PULSE_U64 writes;      /* out: objects written (an item, a bucket) */
  PULSE_U64 free_bucket; /* PUT: a bucket with a free slot seen on the chain, or 0 */
  PULSE_U64 free_slot;   /* PUT: its slot + 1 */
  PULSE_U64 spare_bucket;/* PUT in: a zeroed bucket to link if the chain is full, or 0 */
  PULSE_U64 region_count;/* PUT in/out: pre-allocated items left (ALLOC pops the last) */
  PULSE_U64 regions[PULSE_KV_MAX_REGIONS];
  /* in: the item image (header, key; PUT: the value too); GET out: the item */
  PULSE_U64 data[PULSE_KV_WINDOW_WORDS];
};

#endif
