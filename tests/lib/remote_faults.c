// SPDX-License-Identifier: MIT
/*
 * tests/lib/remote_faults.sh's client of the public API: open URL, and
 * with NAME read that whole tensor.  Prints one line per step, "open 0" or
 * "open -ERRNO MESSAGE" (tfs_errmsg), then "read BYTES" or "read -ERRNO
 * MESSAGE"; exit status 0 when all went well, 1 when a step failed (a
 * signal, as SIGBUS, is the crash the test looks for).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorfs/tensorfs.h"

int main(int argc, char **argv)
{
	struct tfs_model *m = NULL;
	struct tfs_tensor_info t;
	char err[512];
	ssize_t i, n = 0;
	char *buf = NULL;
	int ret;

	if (argc < 2)
		return 2;
	ret = tfs_open(argv[1], NULL, &m, err, sizeof(err));
	printf("open %d%s%s\n", ret, ret ? " " : "", ret ? err : "");
	if (ret) {
		/* the same line twice: the open's message and tfs_errmsg */
		if (strcmp(err, tfs_errmsg(NULL)))
			printf("errmsg differs: %s\n", tfs_errmsg(NULL));
		return 1;
	}
	if (argc > 2) {
		i = tfs_tensor_find(m, argv[2], strlen(argv[2]));
		if (i < 0 || tfs_tensor_info(m, (size_t)i, &t, sizeof(t))) {
			printf("find %zd %s\n", i, tfs_errmsg(m));
			tfs_close(m);
			return 1;
		}
		buf = malloc(t.nbytes ? t.nbytes : 1);
		if (buf)
			n = tfs_read(m, (size_t)i, 0, buf, t.nbytes);
		if (n >= 0)
			printf("read %zd\n", n);
		else
			printf("read %zd %s\n", n, tfs_errmsg(m));
		free(buf);
	}
	tfs_close(m);
	return n < 0 ? 1 : 0;
}
