// SPDX-License-Identifier: MIT
/* The bounded XML reader over libexpat (src/parse/xml.h). */
#include <errno.h>
#include <string.h>

#include "parse/xml.h"
#include "testutil.h"

static const struct tfs_xml_limits lim = {
	.max_depth = 4, .max_attrs = 4, .max_value = 16, .max_size = 4096};

struct rec {
	char log[512];
	size_t n;
};

static int start(void *arg, const char *name, unsigned depth, uint64_t at,
		 const struct tfs_xml_attr *a, size_t n)
{
	struct rec *r = arg;
	size_t i;

	r->n += (size_t)snprintf(r->log + r->n, sizeof(r->log) - r->n,
				 "<%s %u@%llu", name, depth,
				 (unsigned long long)at);
	for (i = 0; i < n; i++)
		r->n += (size_t)snprintf(r->log + r->n, sizeof(r->log) - r->n,
					 " %s=%s@%llu", a[i].name, a[i].value,
					 (unsigned long long)a[i].at);
	r->n += (size_t)snprintf(r->log + r->n, sizeof(r->log) - r->n, ">");
	return 0;
}

static int parse(const char *doc, struct rec *r, struct tfs_diag *d)
{
	struct tfs_xml_handler h = {.start = start, .arg = r};

	memset(r, 0, sizeof(*r));
	tfs_diag_clear(d);
	return tfs_xml_parse(doc, strlen(doc), &lim, &h, d);
}

START_TEST(elements_and_attribute_offsets)
{
	/* offsets counted by hand: the BOM is 3 bytes */
	const char *doc = "\xef\xbb\xbf<?xml version=\"1.0\"?>\n"
			  "<net  version='11' name=\"a&amp;b\">"
			  "<l id=\"1\"\n\tx = \"&#65;\"/></net>";
	struct tfs_diag d;
	struct rec r;

	ck_assert_int_eq(parse(doc, &r, &d), 0);
	ck_assert_str_eq(r.log, "<net 1@25 version=11@31 name=a&b@44>"
				"<l 2@59 id=1@62 x=A@70>");
}
END_TEST

START_TEST(doctype_refused_before_any_entity)
{
	struct tfs_diag d;
	struct rec r;

	ck_assert_int_eq(parse("<?xml version=\"1.0\"?>\n<!DOCTYPE net [ "
			       "<!ENTITY e SYSTEM \"file:///etc/passwd\"> ]>"
			       "<net a=\"&e;\"/>",
			       &r, &d),
			 -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "DOCTYPE"));
	ck_assert(d.has_offset);
	ck_assert_uint_eq(d.offset, 22);
	ck_assert_str_eq(r.log, ""); /* no element was reported */
	ck_assert_int_eq(parse("<!DOCTYPE a><a/>", &r, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "DOCTYPE"));
	ck_assert_uint_eq(d.offset, 0);
}
END_TEST

START_TEST(undeclared_entity_is_malformed)
{
	struct tfs_diag d;
	struct rec r;

	ck_assert_int_eq(parse("<a b=\"&x;\"/>", &r, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "XML: undefined entity"));
	ck_assert(d.has_offset);
	ck_assert_int_eq(parse("<a><b></a>", &r, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "mismatched tag"));
	ck_assert_uint_eq(d.offset, 8); /* expat's: the name in "</a>" */
}
END_TEST

START_TEST(limits)
{
	struct tfs_diag d;
	struct rec r;
	char big[5000];

	ck_assert_int_eq(parse("<a><b><c><d><e/></d></c></b></a>", &r, &d),
			 -E2BIG);
	ck_assert_ptr_nonnull(strstr(d.msg, "'e': nested 5 deep"));
	ck_assert_uint_eq(d.offset, 12);
	ck_assert_int_eq(parse("<a><b><c><d/></c></b></a>", &r, &d), 0);
	ck_assert_int_eq(parse("<a p='1' q='2' r='3' s='4' t='5'/>", &r, &d),
			 -E2BIG);
	ck_assert_ptr_nonnull(strstr(d.msg, "more than 4 attributes"));
	ck_assert_int_eq(parse("<a p='0123456789abcdefX'/>", &r, &d), -E2BIG);
	ck_assert_ptr_nonnull(strstr(d.msg, "attribute 'p': 17 bytes"));
	ck_assert_uint_eq(d.offset, 3);
	memset(big, ' ', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	memcpy(big, "<a/>", 4);
	ck_assert_int_eq(parse(big, &r, &d), -E2BIG);
	ck_assert_ptr_nonnull(strstr(d.msg, "document: 4999 bytes"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xml");
	TCase *tc = tcase_create("xml");

	tcase_add_test(tc, elements_and_attribute_offsets);
	tcase_add_test(tc, doctype_refused_before_any_entity);
	tcase_add_test(tc, undeclared_entity_is_malformed);
	tcase_add_test(tc, limits);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
