/*
 * install_client.c - a program built the way a user builds one: against
 * the installed <tessera.h> and <tdl.h>, compiled and linked with the
 * flags tessera.pc gives (tests/integ/test_install.sh builds and runs it).
 *
 *   install_client CONFIG PATH
 *
 * Writes 1 MiB to PATH, syncs, reads it back; then writes a strided view
 * (256 blocks of 16 bytes every 64 bytes, past the first MiB) by datatype
 * I/O and checks it both by datatype I/O and block by block. Prints one
 * line and exits 0 when everything matched, 1 otherwise.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tdl.h>
#include <tessera.h>

#define MIB (1u << 20)
#define BLOCKS 256
#define BLOCK 16
#define STRIDE 64

static int fail(tessera_fs *fs, const char *what, long long rc)
{
	fprintf(stderr, "install_client: %s failed (%lld): %s\n", what, rc,
		fs ? tessera_errmsg(fs) : "");
	return 1;
}

int main(int argc, char **argv)
{
	static uint8_t data[MIB], back[MIB];
	struct tdl_dataloop *byte = NULL, *view = NULL;
	struct tessera_stat st;
	tessera_file *f = NULL;
	tessera_fs *fs = NULL;
	char err[512];
	ssize_t n;
	int rc = 1;

	if (argc != 3) {
		fprintf(stderr, "usage: install_client CONFIG PATH\n");
		return 2;
	}
	if (tessera_connect(argv[1], &fs, err, sizeof(err))) {
		fprintf(stderr, "install_client: %s\n", err);
		return 1;
	}
	for (size_t i = 0; i < MIB; i++)
		data[i] = (uint8_t)(i * 131 + 7);
	if ((n = tessera_open(fs, argv[2], O_CREAT | O_RDWR | O_TRUNC, 0644, NULL, &f)))
		return fail(fs, "open", n);
	if ((n = tessera_pwrite(f, data, MIB, 0)) != MIB)
		return fail(fs, "pwrite", n);
	if ((n = tessera_fsync(f)))
		return fail(fs, "fsync", n);
	if ((n = tessera_pread(f, back, MIB, 0)) != MIB)
		return fail(fs, "pread", n);
	if (memcmp(data, back, MIB)) {
		fprintf(stderr, "install_client: %s reads back different bytes\n", argv[2]);
		goto out;
	}

	/* Datatype I/O through a dataloop built with the installed tdl.h. */
	if (tdl_bytes(1, &byte) || tdl_vector(BLOCKS, BLOCK, STRIDE, byte, &view))
		return fail(NULL, "building the dataloop", -1);
	if ((n = tessera_write_dtype(f, data, BLOCKS * BLOCK, NULL, view, MIB, 0)) !=
	    BLOCKS * BLOCK)
		return fail(fs, "write_dtype", n);
	memset(back, 0, BLOCKS * BLOCK);
	if ((n = tessera_read_dtype(f, back, BLOCKS * BLOCK, NULL, view, MIB, 0)) !=
	    BLOCKS * BLOCK)
		return fail(fs, "read_dtype", n);
	if (memcmp(data, back, BLOCKS * BLOCK)) {
		fprintf(stderr, "install_client: the strided view reads back different bytes\n");
		goto out;
	}
	for (int b = 0; b < BLOCKS; b++) {
		uint8_t blk[BLOCK];

		if ((n = tessera_pread(f, blk, BLOCK, MIB + (uint64_t)b * STRIDE)) != BLOCK)
			return fail(fs, "pread of a block", n);
		if (memcmp(blk, data + b * BLOCK, BLOCK)) {
			fprintf(stderr, "install_client: block %d is not where the view put it\n", b);
			goto out;
		}
	}
	if ((n = tessera_fstat(f, &st)))
		return fail(fs, "fstat", n);
	if (st.size != MIB + (BLOCKS - 1) * STRIDE + BLOCK) {
		fprintf(stderr, "install_client: size %llu\n", (unsigned long long)st.size);
		goto out;
	}
	printf("install_client: %s: 1 MiB and a %d-block view written and read back, size %llu\n",
	       argv[2], BLOCKS, (unsigned long long)st.size);
	rc = 0;
out:
	tdl_free(view);
	tdl_free(byte);
	tessera_close(f);
	tessera_disconnect(fs);
	return rc;
}
