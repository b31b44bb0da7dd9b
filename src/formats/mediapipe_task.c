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

static int64_t count_models(const struct tfs_source *src,
			    const struct tfs_zip *z, struct tfs_diag *d)
{
	return tfs_zip_member_count(z, model_member, src, d);
}

static int task_probe(const struct tfs_source *src)
{
	struct tfs_zip z;

	if (!tfs_zip_magic(src->data, src->size) ||
	    tfs_zip_open(&z, src->data, src->size, NULL) ||
	    count_models(src, &z, NULL) <= 0)
		return 0;
	return 80;
}

static int member(const struct tfs_source *src, struct tfs_builder *b,
		  const struct tfs_zip_entry *e, json_t *members,
		  struct tfs_diag *d)
{
	const struct tfs_format *fmt = member_reader(src, e);
	char *name = tfs_zip_member_name(e);
	int ret = 0;

	if (!name)
		return tfs_diag_oom(d);
	if (fmt)
		ret = tfs_zip_member_load(b, e, name, name, fmt, d);
	if (!ret && tfs_zip_member_list(members, e, name,
					fmt ? tfs_format_shown(fmt) : "listed"))
		ret = tfs_diag_oom(d);
	free(name);
	return ret;
}

static int task_load(const struct tfs_source *src, struct tfs_builder *b,
		     struct tfs_diag *d)
{
	struct tfs_zip z;
	struct tfs_zip_iter it;
	struct tfs_zip_entry e;
	json_t *members = json_array(), *task = NULL;
	int64_t n;
	int ret;

	if (!members) {
		ret = tfs_diag_oom(d);
		goto out;
	}
	ret = tfs_zip_open(&z, src->data, src->size, d);
	if (ret)
		goto out;
	n = count_models(src, &z, d);
	if (n <= 0) {
		ret = n ? (int)n
			: tfs_diag_at(d, -EBADMSG, z.cd_offset,
				      "zip: no TFLite model or bundle member");
		goto out;
	}
	tfs_zip_iter_init(&it);
	while ((ret = tfs_zip_next(&z, &it, &e, d)) == 1) {
		ret = member(src, b, &e, members, d);
		if (ret)
			goto out;
	}
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
