/* SPDX-License-Identifier: MIT */
/*
 * Strings kept until a load ends, most often because a struct tfs_strmap
 * borrows them as keys (ONNX's qualified names, OpenVINO's names, a TF
 * checkpoint's folders): kept one by one, freed all at once.
 */
#ifndef TFS_CORE_KEPT_STRINGS_H
#define TFS_CORE_KEPT_STRINGS_H

#include <stddef.h>

struct tfs_kept_strings {
	char **v;
	size_t n, cap;
};

/* keep @s (malloc'd) as v[n - 1]: 0, or -ENOMEM with @s freed */
int tfs_kept_add(struct tfs_kept_strings *k, char *s);

/* every kept string freed, and the list; @k is empty again */
void tfs_kept_free(struct tfs_kept_strings *k);

#endif
