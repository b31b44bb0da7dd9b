// SPDX-License-Identifier: MIT
/*
 * MediaPipe Tasks bundles, `.task` (docs/formats/mediapipe-task.md): a zip
 * of TFLite models (`hand_detector.tflite`), nested bundles
 * (`hand_landmarker.task` inside `gesture_recognizer.task`) and other
 * files (labels, metadata).  MediaPipe reads each member in place: its
 * ExtractFilesfromZipFile keeps a view of the bundle at the member's data
 * position and uncompressed size, so members must be stored.  Each TFLite
 * member is read by the TFLite reader, each nested bundle by this one, as
 * a slice of the archive under a directory named after the member,
 * zero-copy (tfs_builder_load_slice); the others are listed in
 * metadata.json.  A compressed model member is refused (MediaPipe could
 * not read it either).
 *
 * Detection: a zip with a member ending `.tflite` or `.task` (a `.tflite`
 * is also known by `TFL3` at its byte 4, whatever its name).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "formats/common/zip_members.h"
#include "parse/zip.h"
#include "core/builder.h"
#include "core/diag.h"
#include "core/format.h"
#include "core/source.h"

extern const struct tfs_format tfs_format_tflite;
extern const struct tfs_format tfs_format_mediapipe_task;

/* the reader of member @e, or NULL: only listed */
static const struct tfs_format *member_reader(const struct tfs_source *src,
					      const struct tfs_zip_entry *e)
{
	if (tfs_zip_name_ends(e, ".tflite"))
		return &tfs_format_tflite;
	if (tfs_zip_name_ends(e, ".task"))
		return &tfs_format_mediapipe_task;
	if (e->method == TFS_ZIP_STORED && e->comp_size >= 8 &&
	    !memcmp(src->data + e->data_offset + 4, "TFL3", 4))
		return &tfs_format_tflite;
	return NULL;
}

static bool model_member(const struct tfs_zip_entry *e, const void *src)
{
	return member_reader(src, e) != NULL;
}

static int task_probe(const struct tfs_source *src)
{
	return tfs_zip_source_count(src, model_member, src) > 0 ? 80 : 0;
}

struct task_ctx {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	json_t *members;
};

static int member(void *ctx, const struct tfs_zip_entry *e, const char *name)
{
	struct task_ctx *c = ctx;
	const struct tfs_format *fmt = member_reader(c->src, e);
	int ret = 0;

	if (fmt)
		ret = tfs_zip_member_load(c->b, e, name, name, fmt, c->d);
	if (!ret && tfs_zip_member_list(c->members, e, name,
					fmt ? tfs_format_shown(fmt) : "listed"))
		ret = tfs_diag_oom(c->d);
	return ret;
}

static int task_load(const struct tfs_source *src, struct tfs_builder *b,
		     struct tfs_diag *d)
{
	struct tfs_zip z;
	json_t *members = json_array(), *task = NULL;
	struct task_ctx c = {.src = src, .b = b, .d = d, .members = members};
	int64_t n;
	int ret;

	if (!members) {
		ret = tfs_diag_oom(d);
		goto out;
	}
	ret = tfs_zip_open(&z, src->data, src->size, d);
	if (ret)
		goto out;
	n = tfs_zip_member_count(&z, model_member, src, d);
	if (n <= 0) {
		ret = n ? (int)n
			: tfs_diag_at(d, -EBADMSG, z.cd_offset,
				      "zip: no TFLite model or bundle member");
		goto out;
	}
	ret = tfs_zip_each_member(&z, member, &c, d);
	if (ret)
		goto out;
	task = json_pack("{s:I,s:O}", "models", (json_int_t)n, "members",
			 members);
	if (!task ||
	    json_object_set(tfs_builder_metadata(b), "mediapipe_task", task))
		ret = tfs_diag_oom(d);
out:
	json_decref(task);
	json_decref(members);
	return ret;
}

TFS_FORMAT(mediapipe_task,
	   "MediaPipe Tasks bundle .task (zip of TFLite models)",
	   .probe = task_probe, .load = task_load);
