// SPDX-License-Identifier: MIT
/*
 * List the tensors of a container as `tensorfs ls` does (stored name,
 * dtype, shape, bytes), one per line, with libtensorfs:
 *
 *   cc list_tensors.c $(pkg-config --cflags --libs tensorfs)
 *   ./a.out model.safetensors
 */
#include <stdio.h>
#include <string.h>

#include <tensorfs/tensorfs.h>

static void print_shape(const struct tfs_tensor_info *t)
{
	uint32_t i;

	putchar('[');
	for (i = 0; i < t->ndim; i++)
		printf("%s%llu", i ? "," : "", (unsigned long long)t->shape[i]);
	putchar(']');
}

int main(int argc, char **argv)
{
	struct tfs_model *m;
	struct tfs_tensor_info t;
	char err[512];
	size_t i;
	int ret;

	if (argc != 2) {
		fprintf(stderr, "usage: %s CONTAINER\n", argv[0]);
		return 1;
	}
	ret = tfs_open(argv[1], NULL, &m, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s: %s: %s (%s)\n", argv[0], argv[1], err,
			strerror(-ret));
		return 2;
	}
	for (i = 0; i < tfs_tensor_count(m); i++) {
		if (tfs_tensor_info(m, i, &t, sizeof(t)))
			break;
		/* a group's component: the group's name and [ROLE] */
		if (t.role)
			printf("%.*s [%s]", (int)t.group_len, t.group, t.role);
		else
			printf("%.*s", (int)t.name_len, t.name);
		printf("\t%s\t", t.dtype);
		print_shape(&t);
		printf("\t%llu\n", (unsigned long long)t.nbytes);
	}
	tfs_close(m);
	return 0;
}
