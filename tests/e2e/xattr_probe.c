// SPDX-License-Identifier: MIT
/*
 * Checks the getxattr/listxattr size protocol on a mounted path, which the
 * shell tools hide: size 0 returns the length, a buffer one byte too small
 * gives ERANGE, a missing name gives ENODATA (never ENOSYS), setxattr gives
 * EROFS.  Prints the value of NAME on success.  Exit 0 when all hold.
 * Usage: xattr_probe PATH NAME
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

static int fail(const char *what)
{
	fprintf(stderr, "xattr_probe: %s (errno %d: %s)\n", what, errno,
		strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	char buf[65536], small[65536];
	ssize_t len, n;

	if (argc != 3)
		return 2;
	len = getxattr(argv[1], argv[2], NULL, 0);
	if (len < 0)
		return fail("getxattr size query");
	if (len > 0 && getxattr(argv[1], argv[2], small, (size_t)len - 1) != -1)
		return fail("too small a buffer did not fail");
	if (len > 0 && errno != ERANGE)
		return fail("too small a buffer: not ERANGE");
	n = getxattr(argv[1], argv[2], buf, sizeof(buf));
	if (n != len)
		return fail("value length differs from the size query");
	if (getxattr(argv[1], "user.tensorfs.no-such-name", buf, sizeof(buf)) !=
		    -1 ||
	    errno != ENODATA)
		return fail("missing name: not ENODATA");
	len = listxattr(argv[1], NULL, 0);
	if (len <= 0)
		return fail("listxattr size query");
	if (listxattr(argv[1], small, (size_t)len - 1) != -1 || errno != ERANGE)
		return fail("listxattr too small: not ERANGE");
	if (listxattr(argv[1], small, sizeof(small)) != len)
		return fail("listxattr length differs from the size query");
	if (!memmem(small, (size_t)len, argv[2], strlen(argv[2]) + 1))
		return fail("listxattr does not list the name");
	if (setxattr(argv[1], "user.x", "1", 1, 0) != -1 || errno != EROFS)
		return fail("setxattr: not EROFS");
	if (removexattr(argv[1], argv[2]) != -1 || errno != EROFS)
		return fail("removexattr: not EROFS");
	fwrite(buf, 1, (size_t)n, stdout);
	putchar('\n');
	return 0;
}
