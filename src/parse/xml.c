// SPDX-License-Identifier: MIT
/*
 * The bounded XML reader (xml.h) over libexpat.  expat never fetches an
 * external resource itself: it only reports references to the
 * application, and we refuse the DOCTYPE that would have to declare them
 * before anything else happens.  The entity handlers below are belts and
 * braces in case a DOCTYPE ever got past the first one.
 */
#ifndef XML_DTD
#define XML_DTD /* exposes the billion-laughs setters (expat >= 2.4) */
#endif
#include <errno.h>
#include <expat.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "parse/xml.h"
#include "core/diag.h"

struct xml_state {
	XML_Parser p;
	const unsigned char *data;
	size_t len;
	const struct tfs_xml_limits *lim;
	const struct tfs_xml_handler *h;
	struct tfs_diag *d;
	unsigned depth;
	int ret;
};

static uint64_t xml_here(const struct xml_state *s)
{
	XML_Index i = XML_GetCurrentByteIndex(s->p);

	return i < 0 ? 0 : (uint64_t)i;
}

/* record the first failure and stop the parser */
static void xml_fail(struct xml_state *s, int ret)
{
	if (!s->ret)
		s->ret = ret;
	XML_StopParser(s->p, XML_FALSE);
}

static bool xml_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/*
 * The offsets of the attribute names in the raw start tag [at, at+count),
 * in document order (expat's order: no DTD, so no defaulted attributes);
 * the tag's offset where the scan cannot follow.
 */
static void xml_attr_offsets(const struct xml_state *s, uint64_t at,
			     struct tfs_xml_attr *a, size_t n)
{
	int count = XML_GetCurrentByteCount(s->p);
	size_t i = (size_t)at, end, k;
	unsigned char q;

	for (k = 0; k < n; k++)
		a[k].at = at;
	if (count <= 0 || at >= s->len || (uint64_t)count > s->len - at)
		return;
	end = (size_t)at + (size_t)count;
	i++; /* '<' */
	while (i < end && !xml_space(s->data[i]) && s->data[i] != '/' &&
	       s->data[i] != '>')
		i++;
	for (k = 0; k < n; k++) {
		while (i < end && xml_space(s->data[i]))
			i++;
		if (i >= end)
			return;
		a[k].at = i;
		while (i < end && s->data[i] != '=')
			i++;
		i++;
		while (i < end && xml_space(s->data[i]))
			i++;
		if (i >= end || (s->data[i] != '"' && s->data[i] != '\''))
			return;
		q = s->data[i++];
		while (i < end && s->data[i] != q)
			i++;
		i++;
	}
}

static void XMLCALL xml_start(void *arg, const XML_Char *name,
			      const XML_Char **atts)
{
	struct xml_state *s = arg;
	struct tfs_xml_attr a[TFS_XML_MAX_ATTRS];
	uint64_t at = xml_here(s);
	size_t n = 0, k;
	int ret;

	if (s->ret)
		return;
	if (++s->depth > s->lim->max_depth) {
		ret = tfs_diag_at(s->d, -E2BIG, at,
				  "element '%s': nested %u deep, above the "
				  "limit of %u",
				  name, s->depth, s->lim->max_depth);
		xml_fail(s, ret);
		return;
	}
	while (atts[2 * n]) {
		if (n >= s->lim->max_attrs || n >= TFS_XML_MAX_ATTRS) {
			ret = tfs_diag_at(s->d, -E2BIG, at,
					  "element '%s': more than %u "
					  "attributes",
					  name, s->lim->max_attrs);
			xml_fail(s, ret);
			return;
		}
		a[n].name = atts[2 * n];
		a[n].value = atts[2 * n + 1];
		a[n].value_len = strlen(a[n].value);
		n++;
	}
	xml_attr_offsets(s, at, a, n);
	for (k = 0; k < n; k++)
		if (a[k].value_len > s->lim->max_value) {
			ret = tfs_diag_at(
				s->d, -E2BIG, a[k].at,
				"element '%s': attribute '%s': %zu "
				"bytes, above the limit of %llu",
				name, a[k].name, a[k].value_len,
				(unsigned long long)s->lim->max_value);
			xml_fail(s, ret);
			return;
		}
	ret = s->h->start(s->h->arg, name, s->depth, at, a, n);
	if (ret)
		xml_fail(s, ret);
}

static void XMLCALL xml_end(void *arg, const XML_Char *name)
{
	struct xml_state *s = arg;
	int ret = 0;

	if (s->ret)
		return;
	if (s->h->end)
		ret = s->h->end(s->h->arg, name, s->depth, xml_here(s));
	s->depth--;
	if (ret)
		xml_fail(s, ret);
}

static void XMLCALL xml_doctype(void *arg, const XML_Char *name,
				const XML_Char *sysid, const XML_Char *pubid,
				int has_internal_subset)
{
	struct xml_state *s = arg;
	uint64_t at = xml_here(s), k;

	/* expat is past the name (at '[' or '>'): where "<!DOCTYPE" starts */
	for (k = at < s->len ? at : s->len; k > 0 && at - k < 4096; k--)
		if (k >= 1 && s->len - (k - 1) >= 9 &&
		    memcmp(s->data + k - 1, "<!DOCTYPE", 9) == 0) {
			at = k - 1;
			break;
		}
	xml_fail(s, tfs_diag_at(s->d, -EBADMSG, at,
				"DOCTYPE '%s'%s: not allowed (no DTD, no "
				"entity is read)",
				name, sysid ? " with an external id" : ""));
}

static void XMLCALL xml_entity_decl(void *arg, const XML_Char *name,
				    int is_param, const XML_Char *value,
				    int value_len, const XML_Char *base,
				    const XML_Char *sysid,
				    const XML_Char *pubid,
				    const XML_Char *notation)
{
	struct xml_state *s = arg;

	xml_fail(s, tfs_diag_at(s->d, -EBADMSG, xml_here(s),
				"ENTITY '%s': entity declarations are not "
				"allowed",
				name));
}

static int XMLCALL xml_external_ref(XML_Parser p, const XML_Char *context,
				    const XML_Char *base, const XML_Char *sysid,
				    const XML_Char *pubid)
{
	struct xml_state *s = XML_GetUserData(p);

	if (!s->ret)
		s->ret = tfs_diag_at(s->d, -EBADMSG, xml_here(s),
				     "external entity reference: refused");
	return XML_STATUS_ERROR;
}

int tfs_xml_parse(const void *data, size_t len,
		  const struct tfs_xml_limits *lim,
		  const struct tfs_xml_handler *h, struct tfs_diag *d)
{
	struct xml_state s = {
		.data = data, .len = len, .lim = lim, .h = h, .d = d};
	enum XML_Status st;
	int ret = 0;

	if (len > lim->max_size || len > INT_MAX)
		return tfs_diag_at(d, -E2BIG, 0,
				   "document: %zu bytes, above the limit of "
				   "%llu",
				   len, (unsigned long long)lim->max_size);
	s.p = XML_ParserCreate("UTF-8");
	if (!s.p)
		return tfs_diag_oom(d);
	XML_SetUserData(s.p, &s);
	XML_SetElementHandler(s.p, xml_start, xml_end);
	XML_SetStartDoctypeDeclHandler(s.p, xml_doctype);
	XML_SetEntityDeclHandler(s.p, xml_entity_decl);
	XML_SetExternalEntityRefHandler(s.p, xml_external_ref);
	XML_SetParamEntityParsing(s.p, XML_PARAM_ENTITY_PARSING_NEVER);
#if XML_MAJOR_VERSION > 2 || (XML_MAJOR_VERSION == 2 && XML_MINOR_VERSION >= 4)
	XML_SetBillionLaughsAttackProtectionMaximumAmplification(s.p, 100.0f);
	XML_SetBillionLaughsAttackProtectionActivationThreshold(s.p, 8u << 20);
#endif
	st = XML_Parse(s.p, data, (int)len, XML_TRUE);
	if (s.ret)
		ret = s.ret;
	else if (st != XML_STATUS_OK)
		ret = tfs_diag_at(
			d, -EBADMSG, xml_here(&s),
			"XML: %s (line %lu, column %lu)",
			XML_ErrorString(XML_GetErrorCode(s.p)),
			(unsigned long)XML_GetCurrentLineNumber(s.p),
			(unsigned long)XML_GetCurrentColumnNumber(s.p));
	XML_ParserFree(s.p);
	return ret;
}
