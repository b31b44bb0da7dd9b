// SPDX-License-Identifier: MIT
/*
 * What a SavedModel's saved_model.pb says about the model, for
 * metadata.json: the tags of each MetaGraphDef, its signatures (name,
 * method, input and output keys) and the names of its graph's functions.
 * The graph holds no tensor bytes tensorfs serves (those are in
 * variables/), so this reads names only and never refuses: a field it
 * cannot read ends the listing with a "warning" in the object.
 *
 * SavedModel: 1 saved_model_schema_version, 2 meta_graphs.
 * MetaGraphDef: 1 meta_info_def (4 tags, 5 tensorflow_version),
 * 2 graph_def (2 library: 1 function: 1 signature: 1 name),
 * 5 signature_def (map: 1 key, 2 SignatureDef: 1 inputs, 2 outputs
 * (maps, 1 key), 3 method_name).
 */
#include <errno.h>
#include <string.h>

#include <jansson.h>

#include "core/cursor.h"
#include "core/diag.h"
#include "core/names.h"
#include "parse/protobuf.h"
#include "saved_model.h"

/* function names listed at most (a converted model has a few hundred) */
#define SM_MAX_FUNCTIONS 10000

struct sm {
	struct tfs_diag d;
	uint64_t functions;
};

/* the LEN field @f as a JSON string (UTF-8 checked by jansson); or NULL */
static json_t *str_of(const struct tfs_pb_field *f)
{
	return f->wire == TFS_PB_LEN
		       ? json_stringn((const char *)f->data, (size_t)f->len)
		       : NULL;
}

/* append to array @a the string @v (NULL: skipped); -ENOMEM */
static int push(json_t *a, json_t *v)
{
	return v && json_array_append_new(a, v) ? -ENOMEM : 0;
}

/* the field 1 (key) of each map entry @f of a map<string, ...> */
static int map_key(const struct tfs_pb_field *f, json_t *keys, struct sm *s)
{
	struct tfs_cursor c;
	struct tfs_pb_field g;
	int ret;

	if (f->wire != TFS_PB_LEN)
		return 0;
	tfs_pb_sub(f, &c);
	while ((ret = tfs_pb_next(&c, "map entry", &g, &s->d)) == 1)
		if (g.number == 1 && push(keys, str_of(&g)))
			return -ENOMEM;
	return ret;
}

/* SignatureDef @f: {method_name, inputs, outputs} */
static int signature(const struct tfs_pb_field *f, json_t *o, struct sm *s)
{
	json_t *in = json_array(), *out = json_array(), *m = NULL;
	struct tfs_cursor c;
	struct tfs_pb_field g;
	int ret;

	if (!in || !out || json_object_set_new(o, "inputs", in) ||
	    json_object_set_new(o, "outputs", out))
		return -ENOMEM;
	tfs_pb_sub(f, &c);
	while ((ret = tfs_pb_next(&c, "SignatureDef", &g, &s->d)) == 1) {
		if (g.number == 1 || g.number == 2)
			ret = map_key(&g, g.number == 1 ? in : out, s);
		else if (g.number == 3 && (m = str_of(&g)))
			ret = json_object_set_new(o, "method_name", m) ? -ENOMEM
								       : 0;
		if (ret)
			return ret;
	}
	return ret;
}

/* one signature_def map entry @f into object @sigs */
static int signature_entry(const struct tfs_pb_field *f, json_t *sigs,
			   struct sm *s)
{
	struct tfs_cursor c;
	struct tfs_pb_field g;
	json_t *o = json_object();
	char key[256] = "";
	int ret;

	if (!o)
		return -ENOMEM;
	tfs_pb_sub(f, &c);
	while ((ret = tfs_pb_next(&c, "signature_def", &g, &s->d)) == 1) {
		if (g.number == 1 && g.wire == TFS_PB_LEN &&
		    g.len < sizeof(key)) {
			memcpy(key, g.data, (size_t)g.len);
			key[g.len] = '\0';
		} else if (g.number == 2 && g.wire == TFS_PB_LEN) {
			ret = signature(&g, o, s);
			if (ret)
				break;
		}
	}
	if (ret || !tfs_utf8_valid((const unsigned char *)key, strlen(key))) {
		json_decref(o);
		return ret;
	}
	return json_object_set_new(sigs, key, o) ? -ENOMEM : 0;
}

/* GraphDef @f: the names of library.function[].signature */
static int functions(const struct tfs_pb_field *f, json_t *names, struct sm *s)
{
	struct tfs_cursor c, lc, fc, oc;
	struct tfs_pb_field g, l, h, o;
	int ret;

	tfs_pb_sub(f, &c);
	while ((ret = tfs_pb_next(&c, "GraphDef", &g, &s->d)) == 1) {
		if (g.number != 2 || g.wire != TFS_PB_LEN)
			continue;
		tfs_pb_sub(&g, &lc);
		while ((ret = tfs_pb_next(&lc, "FunctionDefLibrary", &l,
					  &s->d)) == 1) {
			if (l.number != 1 || l.wire != TFS_PB_LEN)
				continue;
			tfs_pb_sub(&l, &fc);
			while ((ret = tfs_pb_next(&fc, "FunctionDef", &h,
						  &s->d)) == 1) {
				if (h.number != 1 || h.wire != TFS_PB_LEN)
					continue;
				tfs_pb_sub(&h, &oc);
				while ((ret = tfs_pb_next(&oc, "OpDef", &o,
							  &s->d)) == 1)
					if (o.number == 1 &&
					    s->functions++ < SM_MAX_FUNCTIONS &&
					    push(names, str_of(&o)))
						return -ENOMEM;
				if (ret)
					return ret;
			}
			if (ret)
				return ret;
		}
		if (ret)
			return ret;
	}
	return ret;
}

/* MetaInfoDef @f: tags, tensorflow_version */
static int meta_info(const struct tfs_pb_field *f, json_t *mg, json_t *tags,
		     struct sm *s)
{
	struct tfs_cursor c;
	struct tfs_pb_field g;
	json_t *v;
	int ret;

	tfs_pb_sub(f, &c);
	while ((ret = tfs_pb_next(&c, "MetaInfoDef", &g, &s->d)) == 1) {
		if (g.number == 4 && push(tags, str_of(&g)))
			return -ENOMEM;
		if (g.number == 5 && (v = str_of(&g)) &&
		    json_object_set_new(mg, "tensorflow_version", v))
			return -ENOMEM;
	}
	return ret;
}

static int meta_graph(const struct tfs_pb_field *f, json_t *mg, struct sm *s)
{
	json_t *tags = json_array(), *sigs = json_object(), *fns = json_array();
	struct tfs_cursor c;
	struct tfs_pb_field g;
	int ret;

	if (!tags || !sigs || !fns || json_object_set_new(mg, "tags", tags) ||
	    json_object_set_new(mg, "signatures", sigs) ||
	    json_object_set_new(mg, "functions", fns))
		return -ENOMEM;
	tfs_pb_sub(f, &c);
	while ((ret = tfs_pb_next(&c, "MetaGraphDef", &g, &s->d)) == 1) {
		if (g.wire != TFS_PB_LEN)
			continue;
		if (g.number == 1)
			ret = meta_info(&g, mg, tags, s);
		else if (g.number == 2)
			ret = functions(&g, fns, s);
		else if (g.number == 5)
			ret = signature_entry(&g, sigs, s);
		if (ret)
			return ret;
	}
	return ret;
}

json_t *tfs_saved_model_json(const uint8_t *p, uint64_t len)
{
	json_t *o = json_object(), *mgs = json_array(), *mg;
	struct sm s = {.functions = 0};
	struct tfs_cursor c;
	struct tfs_pb_field f;
	int ret;

	if (!o || !mgs || json_object_set_new(o, "meta_graphs", mgs)) {
		json_decref(o);
		return NULL;
	}
	tfs_cursor_init(&c, p, len, 0);
	while ((ret = tfs_pb_next(&c, "SavedModel", &f, &s.d)) == 1) {
		if (f.number == 1 && f.wire == TFS_PB_VARINT &&
		    json_object_set_new(o, "schema_version",
					json_integer((json_int_t)f.v)))
			ret = -ENOMEM;
		if (f.number != 2 || f.wire != TFS_PB_LEN)
			continue;
		mg = json_object();
		ret = mg && !json_array_append_new(mgs, mg) ? 0 : -ENOMEM;
		ret = ret ? ret : meta_graph(&f, mg, &s);
		if (ret)
			break;
	}
	if (ret == -ENOMEM) {
		json_decref(o);
		return NULL;
	}
	if (s.functions > SM_MAX_FUNCTIONS &&
	    json_object_set_new(
		    o, "functions_not_listed",
		    json_integer((json_int_t)(s.functions - SM_MAX_FUNCTIONS))))
		ret = -ENOMEM;
	if (ret < 0) {
		char why[TFS_DIAG_MSG_MAX + 64];

		tfs_diag_format(&s.d, why, sizeof(why));
		if (json_object_set_new(o, "warning", json_string(why))) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}
