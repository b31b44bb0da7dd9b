#!/usr/bin/env bash
# The formats Netron opens (issue 40), through `tensorfs convert`: each
# generated sample and each real file of ../shared/real converted to
# safetensors, and the safetensors file read back by a reader of its own
# (tests/e2e/netron_check.py, the standard library only) against the
# expectations an independent reader gave (tests/fixtures/<fmt>/*.json):
# every tensor's name, dtype, shape and sha256, nothing more.  No FUSE.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
HERE=$(dirname "$0")
D=$TFS_TESTDATA

# convert_check WHAT CONTAINER EXPECTED.json [KEY]: KEY picks one entry of
# the expectations' "valid" object
convert_check() {
	rm -f "$WORK/c.safetensors"
	if ! "$TENSORFS" convert "$2" "$WORK/c.safetensors" >/dev/null; then
		fail "$1: convert"
		return
	fi
	check "$1: read back exactly" $PY "$HERE/netron_check.py" \
		"$WORK/c.safetensors" "$3" ${4:+"$4"}
}

convert_check "darknet tiny (from the .weights)" \
	"$D/darknet/valid/tiny.weights" "$D/darknet/expected.json" tiny.weights
convert_check "darknet tiny (from the .cfg)" \
	"$D/darknet/valid/tiny.cfg" "$D/darknet/expected.json" tiny.weights
convert_check "darknet old (16-byte header)" \
	"$D/darknet/valid/old.weights" "$D/darknet/expected.json" old.weights
R=$TFS_FIXTURES/../real
if shared_case "darknet Yolo-Fastest" ../real/darknet/yolo-fastest-1.1.weights
then
	convert_check "darknet Yolo-Fastest 1.1" \
		"$R/darknet/yolo-fastest-1.1.weights" \
		"$D/darknet/real-yolo-fastest-1.1.expected.json"
fi
convert_check "caffe V2" "$D/caffe/valid/v2.caffemodel" \
	"$D/caffe/expected.json" v2.caffemodel
convert_check "caffe V1 and V0" "$D/caffe/valid/v1.caffemodel" \
	"$D/caffe/expected.json" v1.caffemodel
if shared_case "caffe MTCNN det1" ../real/caffe/det1.caffemodel; then
	convert_check "caffe MTCNN det1" "$R/caffe/det1.caffemodel" \
		"$D/caffe/real-det1.expected.json"
fi
convert_check "ncnn tiny (float16, int8, float32 Mats)" \
	"$D/ncnn/model/tiny.param" "$D/ncnn/expected.json" model/tiny.param
if shared_case "ncnn slim_320" ../real/ncnn/slim_320.param; then
	convert_check "ncnn slim_320" "$R/ncnn/slim_320.param" \
		"$D/ncnn/real-slim_320.expected.json"
fi
convert_check "mxnet V1, V2, V3 and legacy arrays" \
	"$D/mxnet/valid/model-0000.params" "$D/mxnet/expected.json" \
	model-0000.params
if shared_case "mxnet RetinaFace" ../real/mxnet/retinaface.params; then
	convert_check "mxnet RetinaFace" "$R/mxnet/retinaface.params" \
		"$D/mxnet/real-retinaface.expected.json"
fi
convert_check "torch7 module tree (a strided view gathered)" \
	"$D/torch7/valid/model.t7" "$D/torch7/expected.json" model.t7
convert_check "coreml network (float16, int8, deconvolution)" \
	"$D/coreml/valid/net.mlmodel" "$D/coreml/expected.json" net.mlmodel
convert_check "coreml pipeline" "$D/coreml/valid/pipeline.mlmodel" \
	"$D/coreml/expected.json" pipeline.mlmodel
C=coreml/keras2coreml_Dense_ImageNet_small.mlmodel
if shared_case "coreml keras2coreml Dense" "../real/$C"; then
	convert_check "coreml keras2coreml Dense" "$R/$C" \
		"$D/coreml/real-keras2coreml-dense.expected.json"
fi
finish
