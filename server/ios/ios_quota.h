/*
 * ios_quota.h - what each uid holds in a storage daemon's lock table: its
 * lock requests and the table memory they take (tlk_request_footprint),
 * against the config's lock_requests_per_uid and lock_bytes_per_uid, so
 * one user cannot fill the table that every user's locks share. Root
 * (uid 0) has no per-uid share. Only the loop thread calls these.
 */
#ifndef TESSERA_IOS_QUOTA_H
#define TESSERA_IOS_QUOTA_H

#include <stddef.h>
#include <stdint.h>

struct ios_lockq;

int ios_lockq_create(uint32_t max_requests, uint64_t max_bytes, struct ios_lockq **out);
void ios_lockq_destroy(struct ios_lockq *q);
/* May uid add one request of `bytes`? 0, or -EDQUOT with why (which limit,
 * what uid holds) written for the error reply. */
int ios_lockq_admit(struct ios_lockq *q, uint32_t uid, size_t bytes, char *why, size_t len);
/* The request lock_id of `owner` (a lock session) now exists, charged to
 * uid; -ENOMEM (then it is not counted). */
int ios_lockq_charge(struct ios_lockq *q, uint64_t lock_id, uint64_t owner, uint32_t uid,
		     size_t bytes);
/* The request is gone (released); the owner's requests are gone (its
 * lease expired). Unknown ids are ignored. */
void ios_lockq_release(struct ios_lockq *q, uint64_t lock_id);
void ios_lockq_release_owner(struct ios_lockq *q, uint64_t owner);

#endif /* TESSERA_IOS_QUOTA_H */
