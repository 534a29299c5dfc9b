#!/bin/sh
# Every figure of docs/gpu-benchmarks.md in one device call, each part under its own time limit so
# that one slow part cannot cost the rest. Run from the repository root on the lent machine, with
# `.gl`, `.denobin` and `.gpucache` carried (docs/gpu-benchmarks.md makes them). Every part goes
# into one file, $OUT/gpu.txt ($OUT: the device tool's folder; else ./gpu-out), as it prints: the
# file comes back whole even when the call is cut off, and one file is under the tool's limit on
# how many come back. Each part is a section headed `== part NAME: COMMAND`.
set -u
out=${OUT:-gpu-out}
mkdir -p "$out"
log=$out/gpu.txt
: >"$log"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
xz -dc .denobin/deno.xz >/tmp/deno && chmod +x /tmp/deno
# The machine reaches no registry: the few npm packages these entry points import come from the
# carried cache, resolved through a small import map instead of the project's whole lock.
export PATH=/tmp:$PATH DENO_DIR=$PWD/.gpucache PYTHONUNBUFFERED=1 DENO_WEBGPU_BACKEND=vulkan
flags="--cached-only --no-config --no-lock --node-modules-dir=none"
# Child processes (bench-torch's engine side) resolve modules the same way.
export PSYCHE_DENO_RUN_FLAGS="$flags --import-map $PWD/bench/gpu/import_map.json"
deno_run="deno run $PSYCHE_DENO_RUN_FLAGS -A"
# The NVIDIA Vulkan manifest sits outside the loader's default search path on these machines.
icd=$(find /usr/local/nvidia /usr/share/vulkan /etc/vulkan -name 'nvidia_icd*.json' 2>/dev/null | head -1)
[ -n "$icd" ] && export VK_DRIVER_FILES="$icd"
egl=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[ -f "$egl" ] && export __EGL_VENDOR_LIBRARY_FILENAMES="$egl"
section() { # section NAME: the lines of the log's sections named NAME
  awk -v head="== part $1: " '/^== part /{ keep = index($0, head) == 1 } keep' "$log"
}
run() { # run LIMIT_S NAME COMMAND...: one part, appended to the log as it prints, then echoed
  limit=$1 name=$2
  shift 2
  echo "== part $name: $* (limit ${limit}s)" >>"$log"
  start=$(date +%s)
  timeout "$limit" "$@" >>"$log" 2>&1
  echo "== exit $? after $(($(date +%s) - start)) s" >>"$log"
  section "$name"
}
{
  echo "== part env.txt: the machine"
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
  deno --version | head -1
  nproc
  uptime
  echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset}"
  # Features (is "subgroups" there?), subgroup sizes and the limits the kernels are shaped by.
  timeout 30 $deno_run bench/gpu/adapter.ts
} >>"$log" 2>&1
section env.txt
step() { # step LIMIT_S CONFIG BATCH SEQ: our engine against eager PyTorch
  run "$1" "step-$(basename "$2")-$3x$4.txt" $deno_run bench/torch/compare.ts \
    --config "$2" --batch "$3" --seq-len "$4" --device cuda --warmup 3 --steps 20 --json
}
# Parts to run: the arguments, or every part (in this order: the most wanted first, what the
# second lease of 2026-11-30 left unmeasured; the parts measured then last). `sweep` picks the
# tiling `profile` and `steps` try when it runs before them.
parts=${*:-"transformers-greedy steps 1b-torch picker profile sweep matmul splitk verify-train verify-check readback 1b attention distro upload seeded matmul-16"}
# The tiling `profile` and `steps` try beside the profile's: the sweep's pick, or BEST_TILING (a
# pick of an earlier call, so a later call need not sweep again).
best=${BEST_TILING:-}
for part in $parts; do
  case $part in
  attention)
    # The tiled attention (workgroup-memory tiles, the GPU profile's) against the row kernels, at
    # the 20M and 1B heads, then with packed documents; each line says whether the bits agree.
    run 90 attention.txt sh -c "$deno_run bench/attention_gpu.ts --shape 20m --shape 1b &&
      $deno_run bench/attention_gpu.ts --shape 20m --documents 300"
    # Several query rows per invocation (each staged key row read once for 2 or 4 queries; 3-4x
    # faster forward on lavapipe): the row kernels again beside each, bits compared.
    run 90 attention-queries.txt sh -c "$deno_run bench/attention_gpu.ts --shape 20m --shape 1b \
      --tiles 64x64x2 && $deno_run bench/attention_gpu.ts --shape 20m --shape 1b --tiles 64x64x4"
    # A workgroup array per staged row (one bounds clamp a row read, not a vec4), bits compared.
    run 60 attention-row-arrays.txt $deno_run bench/attention_gpu.ts --shape 20m --shape 1b \
      --tiles tiled,ra
    # The whole 20M step with each, attention/... pipelines in the per-kernel table.
    run 200 attention-step-16x1024.txt sh -c "$deno_run bench/step_profile.ts --batch 16 \
      --seq-len 1024 --attention rows &&
      $deno_run bench/step_profile.ts --batch 16 --seq-len 1024 --attention tiled &&
      $deno_run bench/step_profile.ts --batch 16 --seq-len 1024 --attention tiled,ra"
    ;;
  matmul) run 60 matmul-f32.txt $deno_run bench/matmul_gpu.ts --size 4096 --reps 20 ;;
  picker)
    # Candidate tilings at every matmul of the 20M step (4 x 256, 16 x 1024) and the 1B step
    # (1 x 128): per shape and per shape class, the fastest against the profile table's pick.
    run 150 matmul-picker.txt $deno_run bench/matmul_gpu.ts --reps 10 \
      --shapes 20m-4x256,20m-16x1024,1b-1x128
    ;;
  upload)
    # The 1B stall's suspect: the same 20M weights through buffers mapped at creation, then in
    # flushed 16 MiB writes; each prints its MB/s ("built and uploaded in ... MB/s of weights").
    run 90 upload-20m.txt sh -c "$deno_run bench/step_profile.ts --steps 1 --upload mapped &&
      $deno_run bench/step_profile.ts --steps 1 --upload chunked"
    ;;
  seeded)
    # The seeded init on the host's cores (no GPU): this thread against worker threads, the
    # other half of a seeded 1B start's time once the upload is fast.
    run 60 seeded-init.txt $deno_run bench/seeded_init.ts --rounds 3
    ;;
  matmul-16)
    run 45 matmul-16bit.txt sh -c "$deno_run bench/matmul_gpu.ts --size 4096 --reps 20 --f16 &&
      $deno_run bench/matmul_gpu.ts --size 4096 --reps 20 --bf16"
    ;;
  sweep)
    # Time the tilings worth trying; the one with the least time over the three layouts is the
    # candidate the profile part tries on a whole step. Tiling names have no spaces (double-
    # buffered ones end in ",vec4,db"); one the adapter cannot run prints "skipped" and no time.
    run 150 matmul-sweep.txt $deno_run bench/matmul_gpu.ts --size 4096 --reps 10 --sweep
    best=$(section matmul-sweep.txt |
      awk '/^tiling /{t=$2} / GFLOP\/s/{ms[t]+=$4} END{for(t in ms) print ms[t], t}' |
      sort -n | head -1 | cut -d' ' -f2)
    echo "fastest tiling over nn+nt+tn: ${best:-none}" | tee -a "$log"
    ;;
  steps)
    step 90 config/models/llama-20m 4 256
    step 120 config/models/llama-20m 16 1024
    # The sweep's fastest tiling against PyTorch too, in the same call.
    [ -n "$best" ] && run 120 "step-llama-20m-16x1024-$best.txt" $deno_run bench/torch/compare.ts \
      --config config/models/llama-20m --batch 16 --seq-len 1024 --device cuda --warmup 3 \
      --steps 20 --json --tiling "$best"
    ;;
  splitk)
    # Split-K off, then on, in one call: the tn matmul at weight-gradient shapes (K = 16 x 1024
    # tokens; 2048 x 2048 has enough tiles not to split, a control), then the 20M step.
    run 90 splitk-matmul.txt $deno_run bench/matmul_gpu.ts --layout tn --split-k both --reps 20 \
      --shape 256,256,16384 --shape 768,256,16384 --shape 256,768,16384 --shape 512,512,16384 \
      --shape 1024,1024,16384 --shape 2048,2048,16384 --shape 256,256,1024
    run 90 splitk-step-4x256.txt sh -c "$deno_run bench/step_profile.ts --batch 4 --seq-len 256 \
      --split-k off && $deno_run bench/step_profile.ts --batch 4 --seq-len 256 --split-k auto"
    run 150 splitk-step-16x1024.txt sh -c "$deno_run bench/step_profile.ts --batch 16 \
      --seq-len 1024 --split-k off &&
      $deno_run bench/step_profile.ts --batch 16 --seq-len 1024 --split-k auto"
    ;;
  distro)
    run 60 distro.txt $deno_run optimizer/distro_bench.ts --large
    # The 1B's aggregate and payload decode, this thread against workers: the host's cores.
    run 60 codec-workers.txt $deno_run optimizer/codec_pool_bench.ts
    ;;
  readback)
    # A small readback and a wait, Deno's awaited map promise against the early read of a reused
    # staging buffer (shaders/readback.ts): the old costs Deno's 10 ms sleep on any adapter.
    run 45 readback.txt sh -c "$deno_run bench/readback.ts --reads 60 &&
      $deno_run bench/readback.ts --reads 30 --bytes 65536"
    ;;
  profile)
    tiled=""
    [ -n "$best" ] && tiled="&& $deno_run bench/step_profile.ts --batch 16 --seq-len 1024 --tiling $best"
    # 4 x 256 twice: handed to the GPU a layer at a time (the GPU profile), then in one submit.
    run 150 profile-20m.txt sh -c "$deno_run bench/step_profile.ts --batch 4 --seq-len 256 --steps 10 &&
      $deno_run bench/step_profile.ts --batch 4 --seq-len 256 --flush-layers off --steps 10 &&
      $deno_run bench/step_profile.ts --batch 16 --seq-len 1024 &&
      $deno_run bench/step_profile.ts --batch 16 --seq-len 1024 --precision bf16 $tiled"
    ;;
  1b)
    # step_profile prints the upload and every step as it goes: the 2026-11-25 run passed a 100 s
    # limit after the plan with nothing else printed.
    run 200 profile-1b.txt sh -c "$deno_run bench/step_profile.ts --config config/models/llama-1b \
      --batch 1 --seq-len 128 --steps 2 &&
      $deno_run bench/step_profile.ts --config config/models/llama-1b --batch 1 --seq-len 128 \
      --steps 2 --recompute"
    ;;
  1b-torch)
    run 240 step-llama-1b-1x128.txt $deno_run bench/torch/compare.ts \
      --config config/models/llama-1b --batch 1 --seq-len 128 --device cuda --warmup 1 --steps 3
    ;;
  transformers-greedy)
    # Issue 30's one missing file: transformers' greedy tokens on the parity checkpoint, the
    # expectation generate/transformers_parity_test.ts holds `deno task generate` to. The lent
    # machine's python3 has transformers (no PyPI here); the file comes back as
    # $out/transformers_greedy.json, to be committed as generate/testdata/transformers_greedy.json.
    run 150 transformers-greedy.txt sh -c "rm -rf /tmp/psyche-parity &&
      $deno_run generate/testing/parity_checkpoint.ts /tmp/psyche-parity &&
      python3 tools/transformers_greedy.py --model /tmp/psyche-parity --prompt-ids 10,10,84,104,101 \
      --max-new-tokens 24 --out $out/transformers_greedy.json && cat $out/transformers_greedy.json"
    ;;
  verify-train)
    # Verification across adapters (docs/gpu-benchmarks.md): bench-verify's trainer role on this
    # GPU, 8 steps of 4 honest trainers and one per attack on llama-micro, into a folder that comes
    # back as verify-gpu.tgz (about 8 MB) for the verifier role on lavapipe. The machine has no
    # corpus: the trainers read the token prefix in the carried .verify-in/data.
    missing="echo 'no .verify-in/: make and carry it (docs/gpu-benchmarks.md)'; exit 3"
    run 120 verify-train.txt sh -c "[ -d .verify-in/data ] || { $missing; }
      rm -rf /tmp/verify-gpu && $deno_run bench/verification/replay_bench.ts --role trainer \
      --dir /tmp/verify-gpu --data .verify-in/data --model config/models/llama-micro --steps 8 \
      --honest 4 --seq-len 64 && tar czf $out/verify-gpu.tgz -C /tmp verify-gpu &&
      ls -l $out/verify-gpu.tgz"
    ;;
  verify-check)
    # The other direction: the verifier role on this GPU (the default adapter: the only Vulkan
    # driver here is NVIDIA's) against .verify-in/, trained on lavapipe before the lease.
    missing="echo 'no .verify-in/: make and carry it (docs/gpu-benchmarks.md)'; exit 3"
    run 90 verify-check.txt sh -c "[ -f .verify-in/manifest.json ] || { $missing; }
      $deno_run bench/verification/replay_bench.ts --role verifier --dir .verify-in \
      --verifier-backend default"
    ;;
  *)
    echo "unknown part $part (transformers-greedy, readback, upload, seeded, attention, picker, matmul, splitk, matmul-16, sweep, steps, distro, profile, 1b, 1b-torch, verify-train, verify-check)"
    exit 2
    ;;
  esac
done
