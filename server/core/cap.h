/*
 * cap.h - capabilities: the metadata daemon's signed grants that storage
 * daemons check (docs/security.md, "Capabilities").
 *
 * The daemons share one secret key (the config's key_file). A capability's
 * MAC is HMAC-SHA256 under that key over a fixed encoding of its fields
 * (not the protobuf encoding, which a sender may vary), so a storage
 * daemon can tell a grant the metadata daemon made from anything a client
 * built. Clients never hold the key.
 */
#ifndef TESSERA_CAP_H
#define TESSERA_CAP_H

#include <stddef.h>
#include <stdint.h>

#include "tp_clock.h" /* capabilities expire by tp_real_ns() */
#include "tproto.h"

#define CAP_KEY_LEN 32

struct cap_key {
	uint8_t key[CAP_KEY_LEN];
};

/* Read the key file: 64 hex digits. Refused (-EPERM) when group or others
 * may read it, or it cannot be read or parsed (-errno, -EINVAL); err names
 * the file and what is wrong. */
int cap_key_load(const char *path, struct cap_key *key, char *err, size_t errlen);

/* Sign c (its fields 1-5 set) into mac[TP_CAP_MAC_LEN], which c->mac then
 * points to (it must outlive c). -EINVAL: more than TP_CAP_MAX_HANDLES. */
int cap_sign(const struct cap_key *key, Tessera__Capability *c, uint8_t *mac);

/* Whether c's MAC is the key's over its fields (constant-time compare). */
int cap_mac_ok(const struct cap_key *key, const Tessera__Capability *c);

/* The fields' fixed encoding, which the MAC covers: into buf (at least
 * cap_encoded_size(c) bytes); returns its length. */
size_t cap_encoded_size(const Tessera__Capability *c);
size_t cap_encode(const Tessera__Capability *c, uint8_t *buf);

/* Versioning (issue 25): the version server signs each commit and merge
 * grant it hands a client, so a storage daemon applies only real ones.
 * Each has its own fixed encoding and tag (no grant verifies as another
 * kind). -EINVAL: more than TP_MAX_STRIPE handles / TP_VERSION_MAX_IDS
 * live IDs. The _ok functions: 1 if the MAC is the key's. */
#define TP_VERSION_MAX_IDS 1024
int cap_sign_commit(const struct cap_key *key, Tessera__VersionCommit *c, uint8_t *mac);
int cap_commit_ok(const struct cap_key *key, const Tessera__VersionCommit *c);
int cap_sign_grant(const struct cap_key *key, Tessera__VersionGrant *g, uint8_t *mac);
int cap_grant_ok(const struct cap_key *key, const Tessera__VersionGrant *g);
/* A block of writer ID#s (VERSION_ID's answer), which the taker hands to
 * the other ranks of its job: the version server accepts their commits
 * under it (mds_version.h). */
int cap_sign_ids(const struct cap_key *key, Tessera__VersionIds *b, uint8_t *mac);
int cap_ids_ok(const struct cap_key *key, const Tessera__VersionIds *b);

#endif /* TESSERA_CAP_H */
