/*
 * fuse_job.c - the mount's system calls on its own files, on a thread of
 * their own, for a request that waits for them only until a deadline.
 *
 * Such a call (a utimensat(2) or truncate(2) of a file through the
 * mount) sends requests that this process serves, and the request that
 * makes it may hold what they wait for: libfuse holds an open's path
 * until the open is answered, and a rename of the file queued behind the
 * open holds the kernel's lock of the inode a utimensat needs; the kernel
 * holds a directory's lock while an unlink of a name in it waits. So the
 * calls run on a thread (a job), the request waits for the job until its
 * deadline and then is answered, and a job left so ends once what it
 * waited for is free, and frees itself. While it runs, the job's thread
 * is one of the mount's fixers (tf_is_fixup).
 */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fuse_int.h"

struct tf_job {
	struct tfuse *t;
	tf_job_fn *fn;
	struct tfixer as;
	pthread_mutex_t lock;
	pthread_cond_t ended;
	int done, left, rc;      /* under lock; left: the job frees itself */
	max_align_t arg[];       /* a copy of the starter's */
};

static void job_free(struct tf_job *j)
{
	pthread_cond_destroy(&j->ended);
	pthread_mutex_destroy(&j->lock);
	free(j);
}

static void *job_thread(void *arg)
{
	struct tf_job *j = arg;
	int rc, left;

	j->as.tid = gettid();
	tf_fixer_enter(j->t, &j->as);
	rc = j->fn(j->t, j->arg);
	tf_fixer_leave(j->t, &j->as);
	pthread_mutex_lock(&j->t->lock);   /* (the last use of t: tf_jobs_drain) */
	j->t->jobs--;
	pthread_cond_broadcast(&j->t->fixed);
	pthread_mutex_unlock(&j->t->lock);
	pthread_mutex_lock(&j->lock);
	j->done = 1;
	j->rc = rc;
	left = j->left;
	pthread_cond_signal(&j->ended);
	pthread_mutex_unlock(&j->lock);
	if (left)
		job_free(j);
	return NULL;
}

struct tf_job *tf_job_start(struct tfuse *t, tf_job_fn *fn, const void *arg, size_t size,
			    const struct tfixer *as)
{
	struct tf_job *j = calloc(1, sizeof(*j) + size);
	pthread_attr_t attr;
	pthread_t th;
	int rc;

	if (!j)
		return NULL;
	j->t = t;
	j->fn = fn;
	if (as) {
		j->as.mode = as->mode;
		j->as.seen = as->seen;
		j->as.handle = as->handle;
	}
	memcpy(j->arg, arg, size);
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->ended, NULL);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&t->lock);
	t->jobs++;
	pthread_mutex_unlock(&t->lock);
	rc = pthread_create(&th, &attr, job_thread, j);
	pthread_attr_destroy(&attr);
	if (rc) {
		pthread_mutex_lock(&t->lock);
		t->jobs--;
		pthread_mutex_unlock(&t->lock);
		job_free(j);
		return NULL;
	}
	return j;
}

int tf_job_wait(struct tf_job *j, const struct timespec *until)
{
	int done, rc;

	pthread_mutex_lock(&j->lock);
	while (!j->done)
		if (pthread_cond_timedwait(&j->ended, &j->lock, until) == ETIMEDOUT)
			break;
	done = j->done;
	rc = done ? j->rc : -ETIMEDOUT;
	j->left = !done;
	pthread_mutex_unlock(&j->lock);
	if (done)
		job_free(j);
	return rc;
}

unsigned tf_jobs_drain(struct tfuse *t, unsigned ms)
{
	struct timespec until;
	unsigned left;

	tf_deadline(&until, ms);
	pthread_mutex_lock(&t->lock);
	while (t->jobs)
		if (pthread_cond_timedwait(&t->fixed, &t->lock, &until) == ETIMEDOUT)
			break;
	left = t->jobs;
	pthread_mutex_unlock(&t->lock);
	return left;
}

void tf_deadline(struct timespec *until, unsigned ms)
{
	clock_gettime(CLOCK_REALTIME, until);
	until->tv_nsec += (long)(ms % 1000) * 1000000L;
	until->tv_sec += ms / 1000 + until->tv_nsec / 1000000000L;
	until->tv_nsec %= 1000000000L;
}
