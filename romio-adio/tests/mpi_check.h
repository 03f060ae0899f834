/*
 * mpi_check.h - CMocka-style reporting for the MPI test programs.
 *
 * Every rank runs every test; a test passes when it passed on all ranks
 * (an allreduce), and rank 0 prints the lines tests/run-suites.sh counts:
 * "[ RUN      ] name", "[       OK ] name" or "[  FAILED  ] name", and at
 * the end the "[==========]" / "[  PASSED  ]" / "[  FAILED  ]" summary.
 * A failed check prints its reason on the rank where it failed.
 */
#ifndef MPI_CHECK_H
#define MPI_CHECK_H

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int mc_rank, mc_size, mc_run, mc_passed, mc_failed, mc_local_ok;
static char mc_failed_names[4096];
static int mc_skipped;
static char mc_skipped_names[4096];

static void mc_init(void)
{
	MPI_Comm_rank(MPI_COMM_WORLD, &mc_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &mc_size);
	/* Failures are checked and reported, not fatal. */
	MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
}

__attribute__((format(printf, 1, 2))) static void mc_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "    rank %d: ", mc_rank);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	fflush(stderr);
	mc_local_ok = 0;
}

/* Check a condition; on failure say why and leave the test function. */
#define CHECK(cond, ...)                                                  \
	do {                                                              \
		if (!(cond)) {                                            \
			mc_fail(__VA_ARGS__);                             \
			return;                                           \
		}                                                         \
	} while (0)

/* Check an MPI call's result. */
#define CHECK_MPI(call)                                                         \
	do {                                                                    \
		int mc_rc_ = (call);                                            \
		if (mc_rc_ != MPI_SUCCESS) {                                    \
			char mc_s_[MPI_MAX_ERROR_STRING];                       \
			int mc_l_ = 0;                                          \
			MPI_Error_string(mc_rc_, mc_s_, &mc_l_);                \
			mc_fail("%s:%d: %s: %s", __FILE__, __LINE__, #call, mc_s_); \
			return;                                                 \
		}                                                               \
	} while (0)

static void mc_test(const char *name, void (*fn)(void))
{
	int ok;

	if (mc_rank == 0) {
		printf("[ RUN      ] %s\n", name);
		fflush(stdout);
	}
	mc_local_ok = 1;
	fn();
	MPI_Allreduce(&mc_local_ok, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	mc_run++;
	if (ok)
		mc_passed++;
	else {
		mc_failed++;
		if (strlen(mc_failed_names) + strlen(name) + 2 < sizeof(mc_failed_names)) {
			strcat(mc_failed_names, name);
			strcat(mc_failed_names, "\n");
		}
	}
	if (mc_rank == 0) {
		printf("[ %s ] %s\n", ok ? "      OK" : " FAILED ", name);
		fflush(stdout);
	}
}

/* A test that cannot run here: counted as skipped, with the reason. */
__attribute__((unused)) static void mc_skip(const char *name, const char *reason)
{
	size_t used = strlen(mc_skipped_names);

	mc_skipped++;
	if (used + strlen(name) + strlen(reason) + 4 < sizeof(mc_skipped_names))
		snprintf(mc_skipped_names + used, sizeof(mc_skipped_names) - used, "%s: %s\n",
			 name, reason);
}

/* Print the summary; the process's exit status. */
static int mc_finish(void)
{
	if (mc_rank == 0) {
		printf("[==========] %d test(s) run.\n", mc_run);
		printf("[  PASSED  ] %d test(s).\n", mc_passed);
		if (mc_skipped) {
			char *q = mc_skipped_names, *e;

			printf("[  SKIPPED ] %d test(s), listed below:\n", mc_skipped);
			while ((e = strchr(q, '\n'))) {
				*e = 0;
				printf("[  SKIPPED ] %s\n", q);
				q = e + 1;
			}
		}
		if (mc_failed) {
			printf("[  FAILED  ] %d test(s), listed below:\n", mc_failed);
			char *p = mc_failed_names, *nl;
			while ((nl = strchr(p, '\n'))) {
				*nl = 0;
				printf("[  FAILED  ] %s\n", p);
				p = nl + 1;
			}
		}
		fflush(stdout);
	}
	return mc_failed ? 1 : 0;
}

/* The main of a program whose tests all use one file, named by its only
 * argument (stored in *file): run `names[i]` as `fns[i]`, i < n. */
__attribute__((unused)) static int mc_main_on_file(int argc, char **argv, const char **file, const char *const *names,
			   void (*const *fns)(void), int n)
{
	int rc;

	MPI_Init(&argc, &argv);
	mc_init();
	if (argc != 2) {
		MPI_Finalize();
		return 2;
	}
	*file = argv[1];
	for (int i = 0; i < n; i++)
		mc_test(names[i], fns[i]);
	rc = mc_finish();
	MPI_Finalize();
	return rc;
}

#endif /* MPI_CHECK_H */
