/* SPDX-License-Identifier: MIT */
/*
 * A bounded, DTD-free XML reader over Debian's libexpat (OpenVINO IR's
 * model.xml; docs/formats/openvino.md).
 *
 * The document is parsed in one XML_Parse call over the caller's bytes;
 * elements are reported to @start / @end as they close, with the absolute
 * byte offset of the tag and of each attribute's name, so a refusal can
 * name the attribute where it stands.  Character data is ignored.
 *
 * Refused, each as one line with a byte offset (-EBADMSG): any DOCTYPE
 * (internal subset or not: so no entity is ever declared, expanded or
 * loaded; an external entity reference is refused even if one got
 * through), processing the document past a limit (depth, attributes per
 * element, attribute value length: -E2BIG), malformed XML (expat's own
 * message).  expat's billion-laughs amplification limits are on as well.
 * Nothing is allocated by this module but the expat parser, freed before
 * tfs_xml_parse returns.  Thread-safe (no shared state).
 */
#ifndef TFS_PARSE_XML_H
#define TFS_PARSE_XML_H

#include <stddef.h>
#include <stdint.h>

struct tfs_diag;

#define TFS_XML_MAX_ATTRS 64

struct tfs_xml_attr {
	const char *name;  /* NUL-terminated, expat's (valid in the call) */
	const char *value; /* NUL-terminated, entities resolved */
	size_t value_len;
	uint64_t at; /* absolute offset of the name in the document */
};

struct tfs_xml_limits {
	uint32_t max_depth; /* elements nested (the root is 1) */
	uint32_t max_attrs; /* per element, at most TFS_XML_MAX_ATTRS */
	uint64_t max_value; /* bytes of one attribute value */
	uint64_t max_size;  /* bytes of the document */
};

struct tfs_xml_handler {
	/*
	 * An element opens at @depth (the root: 1), its tag at byte @at.
	 * Return 0, or -errno with the diagnostic filled: parsing stops and
	 * tfs_xml_parse returns it.
	 */
	int (*start)(void *arg, const char *name, unsigned depth, uint64_t at,
		     const struct tfs_xml_attr *attrs, size_t nattrs);
	/* an element closes (may be NULL) */
	int (*end)(void *arg, const char *name, unsigned depth, uint64_t at);
	void *arg;
};

/*
 * Parse @data (@len bytes, UTF-8, an optional BOM) with @lim, calling @h.
 * 0, or -errno with @d filled (the field, the byte offset).
 */
int tfs_xml_parse(const void *data, size_t len,
		  const struct tfs_xml_limits *lim,
		  const struct tfs_xml_handler *h, struct tfs_diag *d);

#endif
