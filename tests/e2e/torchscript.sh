#!/usr/bin/env bash
# TorchScript, Lightning and NeMo through real mounts.  With Debian's
# python3-torch: a module (conv, batch norm, linear, a tied weight, a
# non-persistent buffer, float16/bfloat16/int64 buffers) scripted and
# saved by torch.jit.save at run time, and a traced one, must mount with
# every named_parameters() and named_buffers() entry byte-exact at its
# module path.  With the shared fixtures: every tensor of the TorchScript
# archives and of mlp.nemo against expected.json's sha256, the .nemo's
# model_config.yaml as a file, the gzip .nemo and the rejects refused with
# one line, nothing mounted.
. "$(dirname "$0")/lib.sh"
need_fuse
PY=/usr/bin/python3
ran=0

if $PY -c 'import torch' 2>/dev/null; then
	ran=1
	# torch.jit.script reads the source: a file, not stdin
	cat >"$WORK/make.py" <<'PYEOF'

import os, sys, torch
torch.manual_seed(7)
out = sys.argv[1]

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, 3)
        self.bn = torch.nn.BatchNorm2d(3)
    def forward(self, x):
        return self.bn(self.conv(x))

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.emb = torch.nn.Embedding(4, 3)
        self.head = torch.nn.Linear(3, 4, bias=False)
        self.head.weight = self.emb.weight          # tied
        self.seq = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(),
                                       torch.nn.Linear(5, 2))
        self.register_buffer("scale16", torch.randn(3).half())
        self.register_buffer("table", torch.randn(2, 2).bfloat16())
        self.register_buffer("count", torch.tensor(11))
        self.register_buffer("mask", torch.ones(4, dtype=torch.bool),
                             persistent=False)
    def forward(self, x):
        y = self.block(x).mean(dim=(2, 3))
        return self.seq(y) + self.head(y)[:, :2]

def dump(m, name):
    d = os.path.join(out, "want-" + name)
    os.makedirs(d)
    n = 0
    for k, t in list(m.named_parameters()) + list(m.named_buffers()):
        t = t.detach().contiguous()
        if t.dtype == torch.bfloat16:
            t = t.view(torch.int16)
        with open(os.path.join(d, k), "wb") as f:
            f.write(t.numpy().tobytes())
        n += 1
    return n

net = Net().eval()
net.block.bn.running_mean.uniform_()
torch.jit.save(torch.jit.script(net), os.path.join(out, "scripted.pt"))
print(dump(net, "scripted.pt"), file=open(os.path.join(out, "n-scripted.pt"), "w"))
tr = torch.jit.trace(net, torch.randn(1, 2, 5, 5))
torch.jit.save(tr, os.path.join(out, "traced.pt"))
print(dump(tr, "traced.pt"), file=open(os.path.join(out, "n-traced.pt"), "w"))
PYEOF
	$PY "$WORK/make.py" "$WORK" || fail "torch.jit.save at run time"
	for name in scripted.pt traced.pt; do
		M=$(mount_container "$WORK/$name") || { fail "mount $name"; continue; }
		eq "$name: format" "$(getfattr --only-values -n user.tensorfs.format "$M")" torchscript
		n=0
		for want in "$WORK/want-$name"/*; do
			t=$(basename "$want")
			if cmp -s "$M/${t//.//}" "$want"; then
				n=$((n + 1))
			else
				fail "$name: bytes of $t"
			fi
		done
		eq "$name: every parameter and buffer" "$n" "$(cat "$WORK/n-$name")"
		check "$name: tied weight, both names" cmp -s "$M/emb/weight" "$M/head/weight"
		check "$name: training is a leaf" grep -q '"block.bn.training"' "$M/.tensorfs/metadata.json"
		check "$name: no code/ shown" test ! -e "$M/code"
		unmount "$M"
	done
else
	echo "note: python3-torch missing: the run-time torch.jit.save part is skipped"
fi

if [ -d "$TFS_FIXTURES/torchscript" ]; then
	ran=1
	P="$TFS_FIXTURES/torchscript"
	for name in cnn_scripted.pt mlp_traced.pt const_traced.pt lightning_like.ckpt; do
		M=$(mount_container "$P/$name") || { fail "mount $name"; continue; }
		$PY - "$P/expected.json" "$name" "$M" <<'PYEOF' || fail "$name: tensors against expected.json"
import hashlib, json, os, sys
e = json.load(open(sys.argv[1]))["valid"][sys.argv[2]]
for t in e["tensors"]:
    p = os.path.join(sys.argv[3], *t["name"].split("."))
    b = open(p, "rb").read()
    assert hashlib.sha256(b).hexdigest() == t["sha256"], t["name"]
print("ok:", sys.argv[2], len(e["tensors"]), "tensors")
PYEOF
		unmount "$M"
	done
	M=$(mount_container "$P/mlp.nemo") || fail "mount mlp.nemo"
	$PY - "$P/expected.json" "$M" <<'PYEOF' || fail "mlp.nemo: tensors against expected.json"
import hashlib, json, os, sys
e = json.load(open(sys.argv[1]))["valid"]["mlp.nemo"]
for t in e["model_weights_tensors"]:
    p = os.path.join(sys.argv[2], "model_weights.ckpt", *t["name"].split("."))
    assert hashlib.sha256(open(p, "rb").read()).hexdigest() == t["sha256"], t["name"]
cfg = [m for m in e["members"] if m["name"].endswith("model_config.yaml")][0]
b = open(os.path.join(sys.argv[2], ".tensorfs", "model_config.yaml"), "rb").read()
assert hashlib.sha256(b).hexdigest() == cfg["sha256"]
print("ok: mlp.nemo")
PYEOF
	eq "nemo format" "$(getfattr --only-values -n user.tensorfs.format "$M")" nemo
	unmount "$M"
	for f in mlp_gz.nemo reject/evil_os_system_script.pt reject/evil_exec_constants.pt \
		reject/short_storage_script.pt reject/tar_member_past_eof.nemo \
		reject/tar_path_traversal.nemo; do
		mnt=$(mktemp -d "$WORK/mnt.XXXXXX")
		if "$TENSORFS" "$P/$f" "$mnt" >"$WORK/out" 2>&1; then
			fail "$f mounted"
			fusermount3 -u "$mnt"
			continue
		fi
		check "$f: one line" test "$(wc -l <"$WORK/out")" -eq 1
		check "$f: nothing mounted" sh -c "! mountpoint -q '$mnt'"
	done
	check "gzip: gunzip it first" grep -q "gunzip it first" <("$TENSORFS" info "$P/mlp_gz.nemo" 2>&1)
	check "os.system named" grep -q "os.system" <("$TENSORFS" info "$P/reject/evil_os_system_script.pt" 2>&1)
fi
if [ "$ran" = 0 ]; then
	echo "SKIP: neither python3-torch nor the shared fixtures"
	exit 77
fi
finish
