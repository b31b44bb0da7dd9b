/* SPDX-License-Identifier: MIT */
/*
 * A SavedModel's saved_model.pb, read for names only (saved_model.c).
 */
#ifndef TFS_FORMATS_SAVED_MODEL_H
#define TFS_FORMATS_SAVED_MODEL_H

#include <stdint.h>

#include <jansson.h>

/*
 * {"schema_version", "meta_graphs": [{"tags", "tensorflow_version",
 * "signatures": {NAME: {"method_name", "inputs", "outputs"}},
 * "functions"}]} of the @len bytes at @p; a field it cannot read ends the
 * listing with "warning".  NULL: out of memory.
 */
json_t *tfs_saved_model_json(const uint8_t *p, uint64_t len);

#endif
