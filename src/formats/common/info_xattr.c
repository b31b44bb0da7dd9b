// SPDX-License-Identifier: MIT
/* A reader's lines of `tensorfs info` (info_xattr.h). */
#include <stdio.h>

#include "core/builder.h"
#include "formats/common/info_xattr.h"

int tfs_info_xattr(struct tfs_builder *b, const char *label, const char *text)
{
	char key[32];

	snprintf(key, sizeof(key), "info.%s", label);
	return tfs_builder_set_xattr_str(b, TFS_BUILDER_ROOT, key, text);
}

int tfs_info_xattr_printable(struct tfs_builder *b, const char *label,
			     char *text)
{
	char *p;

	for (p = text; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return tfs_info_xattr(b, label, text);
}
