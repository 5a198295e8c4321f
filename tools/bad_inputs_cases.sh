# The cases of tools/bad_inputs.sh (sourced by it): `new_case` makes the
# case's directory (the working directory), the lines after it set it up, and
# `expect` runs the command and checks it (see bad_inputs.sh).
# shellcheck shell=bash disable=SC2154

# ---------------------------------------------------------------- controls
# Inputs that are odd but right: they must work (the harness refuses nothing by itself).
new_case; mkdir d && ln -s "$fm" d/fm
expect -q control "a data directory reached through a symlink trains" 0 "" --writes r.json -- \
  "$ptrain" train @SHORT@ --data d/fm --model softmax --report r.json
new_case
expect control "npy data set trains" 0 "" --writes r.json -- "$ptrain" train "${npy_set[@]}" --model softmax --report r.json

# ---------------------------------------------------------------- train options
new_case; expect -q option "--epochs -1 (would train forever)" 2 "--epochs" -- "$ptrain" train @SHORT@ --epochs -1
new_case; expect option "--epochs nan" 2 "--epochs" -- "$ptrain" train @SHORT@ --epochs nan
new_case; expect option "--epochs inf" 2 "--epochs" -- "$ptrain" train @SHORT@ --epochs inf
new_case; expect -q option "--epochs 1e300 (steps overflow)" 2 "--epochs" -- "$ptrain" train @SHORT@ --epochs 1e300
new_case; expect option "--epochs 1e999 (no double holds it)" 2 "--epochs" -- "$ptrain" train @SHORT@ --epochs 1e999
new_case; expect option "--epochs 0" 2 "--epochs" -- "$ptrain" train @SHORT@ --epochs 0
new_case; expect option "--epochs '' (empty)" 2 "--epochs" -- "$ptrain" train @SHORT@ --epochs ""
new_case; expect -q option "--batch -1 (unsigned)" 2 "--batch" -- "$ptrain" train @SHORT@ --batch -1
new_case; expect option "--batch 0" 2 "--batch" -- "$ptrain" train @SHORT@ --batch 0
new_case; expect option "--batch 18446744073709551616 (past 64 bits)" 2 "--batch" -- \
  "$ptrain" train @SHORT@ --batch 18446744073709551616
new_case; expect -q option "--batch 10000000000000 (no memory holds a batch)" 2 "--batch" -- \
  "$ptrain" train @SHORT@ --batch 10000000000000
new_case; expect option "--batch 1.5" 2 "--batch" -- "$ptrain" train @SHORT@ --batch 1.5
new_case; expect -q option "--workers -1" 2 "--workers" -- "$ptrain" train @SHORT@ --workers -1
new_case; expect -q option "--workers 100000 (threads)" 2 "--workers" -- "$ptrain" train @SHORT@ --workers 100000
new_case; expect option "--workers 4294967296" 2 "--workers" -- "$ptrain" train @SHORT@ --workers 4294967296
new_case; expect -q option "--comm-timeout inf (overflowed to a negative duration)" 2 "--comm-timeout" -- \
  "$ptrain" train @SHORT@ --comm-timeout inf
new_case; expect option "--comm-timeout 1e300" 2 "--comm-timeout" -- "$ptrain" train @SHORT@ --comm-timeout 1e300
new_case; expect option "--comm-timeout nan" 2 "--comm-timeout" -- "$ptrain" train @SHORT@ --comm-timeout nan
new_case; expect option "--comm-timeout -5" 2 "--comm-timeout" -- "$ptrain" train @SHORT@ --comm-timeout -5
new_case; expect option "--comm-timeout 0" 2 "--comm-timeout" -- "$ptrain" train @SHORT@ --comm-timeout 0
new_case; expect option "--comm-timeout 1e-9 (rounds to no time)" 2 "--comm-timeout" -- \
  "$ptrain" train @SHORT@ --comm-timeout 1e-9
new_case; expect option "--time-limit nan" 2 "--time-limit" -- "$ptrain" train @SHORT@ --strategy async --time-limit nan
new_case; expect option "--time-limit -1" 2 "--time-limit" -- "$ptrain" train @SHORT@ --strategy async --time-limit -1
new_case; expect option "--time-limit 1e300" 2 "--time-limit" -- "$ptrain" train @SHORT@ --strategy async --time-limit 1e300
new_case; expect -q option "--lr nan" 2 "--lr" -- "$ptrain" train @SHORT@ --lr nan
new_case; expect option "--lr -0.1" 2 "--lr" -- "$ptrain" train @SHORT@ --lr -0.1
new_case; expect option "--lr inf" 2 "--lr" -- "$ptrain" train @SHORT@ --lr inf
new_case; expect option "--lr 1e300 (past float)" 2 "--lr" -- "$ptrain" train @SHORT@ --lr 1e300
new_case; expect option "--momentum 1.5" 2 "--momentum" -- "$ptrain" train @SHORT@ --optimizer momentum --momentum 1.5
new_case; expect option "--beta2 nan" 2 "--beta2" -- "$ptrain" train @SHORT@ --beta2 nan
new_case; expect option "--seed -1" 2 "--seed" -- "$ptrain" train @SHORT@ --seed -1
new_case; expect option "--log-every 0" 2 "--log-every" -- "$ptrain" train @SHORT@ --log-every 0
new_case; expect option "--max-steps -1" 2 "--max-steps" -- "$ptrain" train @SHORT@ --max-steps -1
new_case; expect option "--threads-per-worker 0" 2 "--threads-per-worker" -- "$ptrain" train @SHORT@ --threads-per-worker 0
new_case; expect option "--threads-per-worker 100000" 2 "--threads-per-worker" -- \
  "$ptrain" train @SHORT@ --threads-per-worker 100000
new_case; expect option "--train-samples -1" 2 "--train-samples" -- "$ptrain" train @SHORT@ --train-samples -1
new_case; expect -q option "--hidden -5" 2 "--hidden" -- "$ptrain" train @SHORT@ --hidden -5
new_case; expect option "--hidden 0" 2 "--hidden" -- "$ptrain" train @SHORT@ --hidden 0
new_case; expect option "--hidden '' (empty)" 2 "--hidden" -- "$ptrain" train @SHORT@ --hidden ""
new_case; expect option "--hidden 128,,64" 2 "--hidden" -- "$ptrain" train @SHORT@ --hidden 128,,64
new_case; expect -q option "--hidden 2000000000 (no memory holds the model)" 2 "--hidden" -- \
  "$ptrain" train @SHORT@ --hidden 2000000000
new_case; expect option "--hidden 100000,100000 (10^10 parameters)" 2 "--hidden" -- \
  "$ptrain" train @SHORT@ --hidden 100000,100000
new_case; expect option "--hidden 99999999999 (past 32 bits)" 2 "--hidden" -- "$ptrain" train @SHORT@ --hidden 99999999999
new_case; expect option "--straggler 1:nan" 2 "--straggler" -- "$ptrain" train @SHORT@ --straggler 1:nan
new_case; expect option "--straggler 1:inf" 2 "--straggler" -- "$ptrain" train @SHORT@ --straggler 1:inf
new_case; expect option "--straggler -1:2" 2 "--straggler" -- "$ptrain" train @SHORT@ --straggler -1:2
new_case; expect option "--straggler 5:2 (no such worker)" 2 "--straggler" -- "$ptrain" train @SHORT@ --straggler 5:2
new_case; expect option "--straggler 1:1e300" 2 "--straggler" -- "$ptrain" train @SHORT@ --straggler 1:1e300
new_case; expect option "--checkpoint-every -1" 2 "--checkpoint-every" -- \
  "$ptrain" train @SHORT@ --checkpoint-dir ck --checkpoint-every -1
new_case; expect option "--checkpoint-every nans" 2 "--checkpoint-every" -- \
  "$ptrain" train @SHORT@ --checkpoint-dir ck --checkpoint-every nans
new_case; expect option "--checkpoint-every 1e300s" 2 "--checkpoint-every" -- \
  "$ptrain" train @SHORT@ --checkpoint-dir ck --checkpoint-every 1e300s
new_case; expect option "--checkpoint-every infs" 2 "--checkpoint-every" -- \
  "$ptrain" train @SHORT@ --checkpoint-dir ck --checkpoint-every infs
new_case; expect option "--checkpoint-keep 0" 2 "--checkpoint-keep" -- "$ptrain" train @SHORT@ --checkpoint-dir ck --checkpoint-keep 0
new_case; expect option "--checkpoint-keep -1" 2 "--checkpoint-keep" -- "$ptrain" train @SHORT@ --checkpoint-dir ck --checkpoint-keep -1
new_case; expect option "--bucket-size -1" 2 "--bucket-size" -- "$ptrain" train @SHORT@ --bucket-size -1
new_case; expect option "--bucket-size 0" 2 "--bucket-size" -- "$ptrain" train @SHORT@ --bucket-size 0
new_case; expect option "--bucket-size 1e300" 2 "--bucket-size" -- "$ptrain" train @SHORT@ --bucket-size 1e300
new_case; expect option "--bucket-size nanMiB" 2 "--bucket-size" -- "$ptrain" train @SHORT@ --bucket-size nanMiB
new_case; expect option "--dgc-density 0" 2 "--dgc-density" -- "$ptrain" train @SHORT@ --compress dgc --dgc-density 0
new_case; expect option "--dgc-density nan" 2 "--dgc-density" -- "$ptrain" train @SHORT@ --compress dgc --dgc-density nan
new_case; expect option "--dgc-warmup inf" 2 "--dgc-warmup" -- "$ptrain" train @SHORT@ --compress dgc --dgc-warmup inf
new_case; expect option "--topk-ratio 2" 2 "--topk-ratio" -- "$ptrain" train @SHORT@ --compress topk --topk-ratio 2
new_case; expect option "--int8-chunk 0" 2 "--int8-chunk" -- "$ptrain" train @SHORT@ --compress int8 --int8-chunk 0
new_case; expect option "--staleness -1" 2 "--staleness" -- "$ptrain" train @SHORT@ --strategy ssp --staleness -1
new_case; expect -q option "--servers -1" 2 "--servers" -- "$ptrain" train @SHORT@ --strategy ps-sync --servers -1
new_case; expect option "--servers 100000" 2 "--servers" -- "$ptrain" train @SHORT@ --strategy ps-sync --servers 100000
new_case; expect option "--backup 2 of 2 workers" 2 "--backup" -- "$ptrain" train @SHORT@ --strategy ps-backup --backup 2
new_case; expect option "--microbatches 0" 2 "--microbatches" -- "$ptrain" train @SHORT@ --microbatches 0
new_case; expect option "--microbatches 33 of a batch of 32" 2 "--microbatches: 33 micro-batches" -- \
  "$ptrain" train @SHORT@ --microbatches 33
new_case; expect option "--microbatches 2 with a shared-memory strategy" 2 "--microbatches applies to the trainer" -- \
  "$ptrain" train @SHORT@ --microbatches 2 --strategy hogwild
new_case; expect option "--strategy pipeline: more stages than the model has layers" 2 "--stages: 3 stages of model mlp's 2 layers" -- \
  "$ptrain" train @SHORT@ --strategy pipeline --workers 3
new_case; expect option "--strategy pipeline: --microbatches 33 of a batch of 32" 2 "--microbatches: 33 micro-batches" -- \
  "$ptrain" train @SHORT@ --strategy pipeline --microbatches 33
new_case; expect option "--strategy pipeline: 2 stages of 3 workers" 2 "--stages: 2 stages do not divide the 3 workers" -- \
  "$ptrain" train @SHORT@ --strategy pipeline --workers 3 --stages 2
new_case; expect option "--strategy pipeline --balance memory" 2 "--balance" -- \
  "$ptrain" train @SHORT@ --strategy pipeline --balance memory
new_case; expect option "--strategy pipeline: more stages than workers" 2 "--stages: 4 stages need as many workers" -- \
  "$ptrain" train @SHORT@ --strategy pipeline --stages 4
new_case; expect option "--memory-limit -1" 2 "--memory-limit: expected a size" -- \
  "$ptrain" train @SHORT@ --memory-limit -1
new_case; expect option "--memory-limit below one worker's whole model" 2 "--memory-limit: worker 0 would hold" -- \
  "$ptrain" train @SHORT@ --workers 1 --memory-limit 64KiB
new_case; expect option "--strategy pipeline: --memory-limit below every cut" 2 "--memory-limit: no cut of model mlp's 2 layers into 2 stages" -- \
  "$ptrain" train @SHORT@ --strategy pipeline --memory-limit 64KiB
new_case; expect option "--memory-limit with a shared-memory strategy" 2 "--memory-limit applies to the trainer" -- \
  "$ptrain" train @SHORT@ --memory-limit 1MiB --strategy hogwild
new_case; expect option "--strategy pipeline: --boundaries past the last layer" 2 "--boundaries: boundaries 5: each must be a layer index" -- \
  "$ptrain" train @SHORT@ --strategy pipeline --boundaries 5
new_case; expect option "--strategy pipeline: --boundaries for other stages" 2 "--boundaries: 2 boundaries make 3 stages, not 2" -- \
  "$ptrain" train @SHORT@ --strategy pipeline --boundaries 1,2
new_case; expect option "--strategy pipeline: a model that cannot be split (softmax)" 2 "model softmax is not a sequence of layers" -- \
  "$ptrain" train @SHORT@ --strategy pipeline --model softmax
new_case; expect option "--strategy pipeline: a codec with one pipeline" 2 "--compress: one pipeline of 2 stages exchanges no gradients" -- \
  "$ptrain" train @SHORT@ --strategy pipeline --compress fp16
new_case; expect option "--strategy pipeline with a straggler" 2 "--straggler slows a worker's whole forward and backward pass" -- \
  "$ptrain" train @SHORT@ --strategy pipeline --straggler 1:2
new_case; expect -q option "--lr-decay step without milestones" 2 "--lr-milestones" -- "$ptrain" train @SHORT@ --lr-decay step
new_case; expect option "--lr-milestones 2,1 (decreasing)" 2 "--lr-milestones must increase" -- \
  "$ptrain" train @SHORT@ --lr-decay step --lr-milestones 2,1 --epochs 3
new_case; expect option "--lr-milestones 5 (past the run's end)" 2 "--lr-milestones 5" -- \
  "$ptrain" train @SHORT@ --lr-decay step --lr-milestones 5
new_case; expect option "--lr-milestones 99999999999999999999" 2 "--lr-milestones" -- \
  "$ptrain" train @SHORT@ --lr-decay step --lr-milestones 99999999999999999999
new_case; expect option "--lr-gamma nan" 2 "--lr-gamma" -- \
  "$ptrain" train @SHORT@ --lr-decay step --lr-milestones 1 --lr-gamma nan --epochs 2
new_case; expect option "--lr-gamma 0" 2 "--lr-gamma" -- \
  "$ptrain" train @SHORT@ --lr-decay step --lr-milestones 1 --lr-gamma 0 --epochs 2
new_case; expect option "--lr-gamma with --lr-decay cosine" 2 "--lr-gamma" -- \
  "$ptrain" train @SHORT@ --lr-decay cosine --lr-gamma 0.5
new_case; expect option "--rollback-lr-scale nan" 2 "--rollback-lr-scale" -- \
  "$ptrain" train @SHORT@ --checkpoint-dir ck --on-diverge rollback --rollback-lr-scale nan
new_case; expect option "--max-rollbacks -1" 2 "--max-rollbacks" -- \
  "$ptrain" train @SHORT@ --checkpoint-dir ck --on-diverge rollback --max-rollbacks -1
new_case; expect option "--stale-policy drop:-1" 2 "--stale-policy" -- "$ptrain" train @SHORT@ --strategy async --stale-policy drop:-1
new_case; expect option "--backend carrier-pigeon" 2 "--backend" -- "$ptrain" train @SHORT@ --backend carrier-pigeon
new_case; expect -q option "--epoch 1 (unknown flag)" 2 "--epochs" -- "$ptrain" train @SHORT@ --epoch 1
new_case; expect option "--strategy nonsense" 2 "--strategy" -- "$ptrain" train @SHORT@ --strategy nonsense
new_case; expect option "--staleness given to hybrid" 2 "--staleness" -- "$ptrain" train @SHORT@ --staleness 3
new_case; expect option "--resume and --config together" 2 "--resume" -- "$ptrain" train --resume . --config x.json

# shm: the shared-memory strategies.
new_case; expect -q option "shm --batch -1 (hung)" 2 "--batch" -- "$ptrain" shm --data "$fm" --epochs 1 --batch -1 --quiet
new_case; expect option "shm --threads -1" 2 "--threads" -- "$ptrain" shm --data "$fm" --epochs 1 --threads -1 --quiet
new_case; expect -q option "shm --threads 100000" 2 "--threads" -- "$ptrain" shm --data "$fm" --epochs 1 --threads 100000 --quiet
new_case; expect option "shm --backoff-max nan" 2 "--backoff-max" -- "$ptrain" shm --data "$fm" --epochs 1 --backoff-max nan --quiet
new_case; expect option "shm --diverge-above -1" 2 "--diverge-above" -- "$ptrain" shm --data "$fm" --epochs 1 --diverge-above -1 --quiet
new_case; expect option "shm --loss-sample -1" 2 "--loss-sample" -- "$ptrain" shm --data "$fm" --epochs 1 --loss-sample -1 --quiet
new_case; expect option "shm --strategy hybrid" 2 "--strategy" -- "$ptrain" shm --data "$fm" --epochs 1 --strategy hybrid --quiet

# ---------------------------------------------------------------- data files
new_case; expect -q data "--data missing directory" 2 "--data" -- "$ptrain" train @SHORT@ --data nowhere
new_case; expect data "--data '' (empty path)" 2 "--data" -- "$ptrain" train @SHORT@ --data ""
new_case; touch f
expect data "--data a regular file" 2 "--data" -- "$ptrain" train @SHORT@ --data f
new_case; mkdir d && cp "$fm"/* d/ && rm d/t10k-labels-idx1-ubyte
expect data "test labels missing" 2 "t10k-labels" -- "$ptrain" train @SHORT@ --data d
new_case; data_with_images fifo
expect -q data "training images a FIFO (hung)" 2 "train-images" -- "$ptrain" train @SHORT@ --data d
new_case; data_with_images device
expect -q data "training images a symlink to /dev/zero" 2 "train-images" -- "$ptrain" train @SHORT@ --data d
new_case; data_with_images dir
expect data "training images a directory" 2 "train-images" -- "$ptrain" train @SHORT@ --data d
new_case; data_with_images loop
expect data "training images a symlink loop" 2 "train-images" -- "$ptrain" train @SHORT@ --data d
new_case; data_with_images dangling
expect data "training images a dangling symlink" 2 "train-images" -- "$ptrain" train @SHORT@ --data d
new_case; data_with_images socket
expect data "training images a socket" 2 "train-images" -- "$ptrain" train @SHORT@ --data d
new_case; mkdir d && cp "$fm"/* d/ && rm d/t10k-images-idx3-ubyte && mkfifo d/t10k-images-idx3-ubyte
expect data "test images a FIFO" 2 "t10k-images" -- "$ptrain" train @SHORT@ --data d
for damage in empty trunc-header trunc-data wrong-magic wrong-type wrong-rank zero-dim huge-dims extra-bytes \
  gz-truncated gz-bad-crc gz-trailing-junk gz-corrupt-deflate; do
  new_case; data_with_images $damage
  q=; [ $damage = huge-dims ] || [ $damage = gz-bad-crc ] && q=-q
  expect $q data "training images: $damage" 2 "train-images" -- "$ptrain" train @SHORT@ --data d
done
new_case; data_with_images bomb-trailing
expect -q data "gzip bomb: 2 GiB of zeros after the data (decompression bounded)" 2 "train-images" -- \
  "$ptrain" train @SHORT@ --data d
new_case; data_with_images bomb-declared
expect -q data "gzip bomb: a header declaring 2e9 bytes, all zeros" 2 "train-images" -- \
  "$ptrain" train @SHORT@ --data d
new_case; mkdir d && cp "$fm"/* d/ && cp "$fx/idx/labels-out-of-range" d/train-labels-idx1-ubyte
expect data "a label outside the 10 classes" 2 "train-labels" -- "$ptrain" train @SHORT@ --data d
new_case; mkdir d && cp "$fm"/* d/ && cp "$fx/idx/labels-short" d/train-labels-idx1-ubyte
expect data "fewer labels than images" 2 "train-labels" -- "$ptrain" train @SHORT@ --data d
new_case; expect -q data "test images 27x27, training 28x28 (softmax: exit 0, 9%)" 2 "--data" -- \
  "$ptrain" train @SHORT@ --data "$fx/fm27" --model softmax
new_case; expect data "test images 27x27, training 28x28 (mlp: a LibTorch stack trace)" 2 "--data" -- \
  "$ptrain" train @SHORT@ --data "$fx/fm27"
new_case; expect data "gzipped data set trains (control)" 0 "" -- "$ptrain" train @SHORT@ --data "$fx/fm-gz" --model softmax

# npy data sets.
npy() { echo "$fx/npy/$1"; }
npy_with() {  # FIELD FILE: the good npy set with one file replaced
  local args=("${npy_set[@]}") i
  for i in "${!args[@]}"; do [ "${args[$i]}" = "--$1" ] && args[$((i + 1))]=$2; done
  printf '%s\n' "${args[@]}"
}
mapfile -t a < <(npy_with test-features "$(npy test-x5.npy)")
new_case; expect -q data "npy: test samples of 5 features, training of 4" 2 "test-x5.npy" -- "$ptrain" train "${a[@]}" --model softmax
mapfile -t a < <(npy_with test-labels "$(npy test-y-classes.npy)")
new_case; expect data "npy: test labels of 7 classes, training of 3, --classes 3" 2 "test-y-classes.npy" -- \
  "$ptrain" train "${a[@]}" --model softmax --classes 3
mapfile -t a < <(npy_with test-labels "$(npy test-y-short.npy)")
new_case; expect data "npy: 63 test labels for 64 samples" 2 "test-y-short.npy" -- "$ptrain" train "${a[@]}" --model softmax
mapfile -t a < <(npy_with train-labels "$(npy train-y-negative.npy)")
new_case; expect data "npy: a negative label" 2 "train-y-negative.npy" -- "$ptrain" train "${a[@]}" --model softmax
mapfile -t a < <(npy_with train-labels "$(npy train-y-float.npy)")
new_case; expect data "npy: float labels" 2 "train-y-float.npy" -- "$ptrain" train "${a[@]}" --model softmax
for f in bad-magic truncated header-only huge-shape overflow-shape pickle train-x-fortran train-x-complex; do
  mapfile -t a < <(npy_with train-features "$(npy $f.npy)")
  q=; [ $f = huge-shape ] && q=-q
  new_case; expect $q data "npy: training features $f" 2 "$f.npy" -- "$ptrain" train "${a[@]}" --model softmax
done
new_case; mkfifo x.npy
mapfile -t a < <(npy_with train-features x.npy)
expect -q data "npy: training features a FIFO" 2 "--train-features" -- "$ptrain" train "${a[@]}" --model softmax
mapfile -t a < <(npy_with train-features /dev/zero)
new_case; expect data "npy: training features /dev/zero" 2 "--train-features" -- "$ptrain" train "${a[@]}" --model softmax
mapfile -t a < <(npy_with train-features "")
new_case; expect data "npy: training features '' (empty path)" 2 "--train-features" -- "$ptrain" train "${a[@]}" --model softmax

# ---------------------------------------------------------------- output paths
new_case; null_device
expect -q output "--report a device (a null device like /dev/null: never replaced)" 2 "--report" -- \
  "$ptrain" train @SHORT@ --report null
new_case; mkfifo r.json
expect -q output "--report a FIFO" 2 "--report" -- "$ptrain" train @SHORT@ --report r.json
new_case; echo keep >target && ln -s target r.json
expect -q output "--report a symlink to a file" 2 "--report" -- "$ptrain" train @SHORT@ --report r.json
new_case; ln -s /etc/passwd r.json
expect output "--report a symlink to /etc/passwd" 2 "--report" -- "$ptrain" train @SHORT@ --report r.json
new_case; mkdir r.json
expect output "--report a directory" 2 "--report" -- "$ptrain" train @SHORT@ --report r.json
new_case; expect output "--report in a missing directory" 2 "--report" -- "$ptrain" train @SHORT@ --report no/r.json
new_case; expect -q output "--report in an unwritable place (/proc)" 2 "--report" -- \
  "$ptrain" train @SHORT@ --report /proc/ptrain-report.json
new_case; expect output "--report '' (empty path)" 2 "--report" -- "$ptrain" train @SHORT@ --report ""
new_case; echo '{"kept": true}' >r.json
expect output "--report an existing file, the run refused: kept" 2 "--epochs" -- \
  "$ptrain" train @SHORT@ --report r.json --epochs -1
new_case; mkfifo m.jsonl
expect output "--metrics a FIFO" 2 "--metrics" -- "$ptrain" train @SHORT@ --metrics m.jsonl
new_case; ln -s /etc/passwd m.jsonl
expect output "--metrics a symlink to /etc/passwd" 2 "--metrics" -- "$ptrain" train @SHORT@ --metrics m.jsonl
new_case; expect -q output "--metrics in a missing directory" 2 "--metrics" -- \
  "$ptrain" train @SHORT@ --metrics no/m.jsonl
new_case; expect output "--metrics and --timeline one file" 2 "--timeline" -- \
  "$ptrain" train @SHORT@ --metrics t.json --timeline t.json
new_case; expect output "--timeline - (standard output)" 2 "--timeline" -- "$ptrain" train @SHORT@ --timeline -
new_case; mkdir t.json
expect output "--timeline a directory" 2 "--timeline" -- "$ptrain" train @SHORT@ --timeline t.json
new_case; ln -s /etc/passwd t.json
expect -q output "--timeline a symlink to /etc/passwd" 2 "--timeline" -- "$ptrain" train @SHORT@ --timeline t.json
new_case; null_device
expect -q output "--save a device (a null device like /dev/null: never replaced)" 2 "--save" -- "$ptrain" train @SHORT@ --save null
new_case; mkfifo m.pt
expect output "--save a FIFO" 2 "--save" -- "$ptrain" train @SHORT@ --save m.pt
new_case; echo keep >target && ln -s target m.pt
expect output "--save a symlink" 2 "--save" -- "$ptrain" train @SHORT@ --save m.pt
new_case; mkdir m.pt
expect output "--save a directory" 2 "--save" -- "$ptrain" train @SHORT@ --save m.pt
new_case; expect output "--save in an unwritable place (/proc)" 2 "--save" -- "$ptrain" train @SHORT@ --save /proc/m.pt
new_case; expect output "--save '' (empty path)" 2 "--save" -- "$ptrain" train @SHORT@ --save ""
new_case; touch ck
expect -q output "--checkpoint-dir a regular file" 2 "--checkpoint-dir" -- "$ptrain" train @SHORT@ --checkpoint-dir ck
new_case; mkfifo ck
expect output "--checkpoint-dir a FIFO" 2 "--checkpoint-dir" -- "$ptrain" train @SHORT@ --checkpoint-dir ck
new_case; null_device
expect output "--checkpoint-dir a device (a null device like /dev/null: never replaced)" 2 "--checkpoint-dir" -- "$ptrain" train @SHORT@ --checkpoint-dir null
new_case; expect output "--checkpoint-dir in an unwritable place (/proc)" 2 "--checkpoint-dir" -- \
  "$ptrain" train @SHORT@ --checkpoint-dir /proc/ck
new_case; expect output "--checkpoint-dir '' with --checkpoint-every" 2 "--checkpoint-dir" -- \
  "$ptrain" train @SHORT@ --checkpoint-dir "" --checkpoint-every 5

# ---------------------------------------------------------------- pull codecs
# What a parameter-server pull sends back: only the parameter servers pull, and every value is checked.
new_case; expect pull "--pull fp16 with hybrid (nothing pulls)" 2 "--pull" -- "$ptrain" train @SHORT@ --pull fp16
new_case; expect pull "--pull zip (no such codec)" 2 "--pull: unknown pull codec 'zip'" -- \
  "$ptrain" train @SHORT@ --strategy ps-sync --pull zip
new_case; expect pull "--pull '' (empty)" 2 "--pull" -- "$ptrain" train @SHORT@ --strategy ps-sync --pull ""
new_case; expect pull "--pull-topk-ratio 0" 2 "--pull-topk-ratio" -- \
  "$ptrain" train @SHORT@ --strategy async --pull topk --pull-topk-ratio 0
new_case; expect pull "--pull-topk-ratio nan" 2 "--pull-topk-ratio" -- \
  "$ptrain" train @SHORT@ --strategy async --pull topk --pull-topk-ratio nan
new_case; expect pull "--pull-topk-refresh -1" 2 "--pull-topk-refresh" -- \
  "$ptrain" train @SHORT@ --strategy ssp --pull topk --pull-topk-refresh -1
new_case; expect pull "--pull-int8-chunk 0" 2 "--pull-int8-chunk" -- \
  "$ptrain" train @SHORT@ --strategy ps-sync --pull int8 --pull-int8-chunk 0
new_case; expect pull "--pull-topk-refresh without --pull topk (was it meant?)" 2 "--pull-topk-refresh" -- \
  "$ptrain" train @SHORT@ --strategy ps-sync --pull-topk-refresh 5
new_case; expect pull "shm --pull fp16 (threads share one copy)" 2 "--pull" -- "$ptrain" shm --pull fp16 --quiet
new_case; printf '{"strategy": {"name": "ps-sync"}, "pull": {"name": "fp16", "ratio": 0.1}}' > p.json
expect pull "a plan's pull section with another codec's field" 2 "pull.ratio" -- \
  "$ptrain" train --config p.json @SHORT@
new_case; printf '{"strategy": {"name": "ps-sync"}, "pull": "fp16"}' > p.json
expect pull "a plan's pull section that is not an object" 2 "pull" -- "$ptrain" train --config p.json @SHORT@
new_case; expect pull "simulate --pull-codec zip" 2 "--pull-codec" -- "$ptrain" simulate --exchange ps --pull-codec zip

# ---------------------------------------------------------------- plan files, reports
for f in corrupt empty not-object unknown-field unknown-section negative-epochs huge-number negative-batch \
  wrong-type huge-workers nan-timeout deep binary; do
  q=; [ $f = corrupt ] || [ $f = deep ] && q=-q
  # A value out of its range is named as the field's flag, as every plan problem is.
  needle=plan-$f.json; [ $f = negative-epochs ] && needle="--epochs"; [ $f = huge-workers ] && needle="--workers 100000"
  new_case; expect $q plan "--config: $f" 2 "$needle" -- "$ptrain" train --config "$fx/plans/plan-$f.json" --data "$fm" --quiet
done
new_case; expect plan "--config a truncated report" 2 "report-truncated.json" -- \
  "$ptrain" train --config "$fx/plans/report-truncated.json" --data "$fm" --quiet
new_case; expect plan "--config missing" 2 "nothing.json" -- "$ptrain" train --config nothing.json @SHORT@
new_case; mkfifo p.json
expect -q plan "--config a FIFO" 2 "p.json" -- "$ptrain" train --config p.json @SHORT@
new_case; expect plan "--config /dev/zero" 2 "/dev/zero" -- "$ptrain" train --config /dev/zero @SHORT@
new_case; mkdir p.json
expect plan "--config a directory" 2 "p.json" -- "$ptrain" train --config p.json @SHORT@
new_case; expect plan "--config '' (empty path)" 2 "--config" -- "$ptrain" train --config "" @SHORT@

# ---------------------------------------------------------------- checkpoints
# One good checkpoint directory, damaged copies of it resumed.
ck_good=$T/ck-good
"$ptrain" train "${short[@]}" --model softmax --checkpoint-dir "$ck_good" --checkpoint-every 4 >/dev/null 2>&1
damaged_checkpoints() {  # HOW: every checkpoint in ./ck damaged so
  cp -r "$ck_good" ck
  local f
  for f in ck/*; do
    case $1 in
      truncate) [ -f "$f" ] && truncate -s $(($(stat -c %s "$f") / 2)) "$f" ;;
      flip) [ -f "$f" ] && printf '\xff' | dd of="$f" bs=1 seek=$(($(stat -c %s "$f") / 2)) conv=notrunc 2>/dev/null ;;
      empty) [ -f "$f" ] && : >"$f" ;;
      fifo) [ -f "$f" ] && rm "$f" && mkfifo "$f" ;;
    esac
  done
}
for how in truncate flip empty fifo; do
  new_case; damaged_checkpoints $how
  q=; [ $how = flip ] && q=-q
  expect $q checkpoint "--resume: every checkpoint ${how}" 2 "ck" -- "$ptrain" train --resume ck --quiet
done
new_case; expect checkpoint "--resume a missing directory" 2 "nowhere" -- "$ptrain" train --resume nowhere --quiet
new_case; mkdir ck
expect checkpoint "--resume an empty directory" 2 "ck" -- "$ptrain" train --resume ck --quiet
new_case; touch ck
expect checkpoint "--resume a regular file" 2 "ck" -- "$ptrain" train --resume ck --quiet
new_case; expect checkpoint "--resume '' (empty path)" 2 "--resume" -- "$ptrain" train --resume "" --quiet
new_case; cp -r "$ck_good" ck
expect checkpoint "--resume with --workers changed" 2 "--workers" -- "$ptrain" train --resume ck --workers 3 --quiet

# ---------------------------------------------------------------- divergence
new_case; expect -q diverge "--lr 1e30 (diverges): exit 3, report written" 3 "diverged" --writes r.json -- \
  "$ptrain" train @SHORT@ --optimizer sgd --lr 1e30 --report r.json
mapfile -t a < <(npy_with train-features "$(npy train-x-nan.npy)")
new_case; expect data "npy: a NaN among the features" 2 "train-x-nan.npy" -- "$ptrain" train "${a[@]}" --model softmax
new_case; expect diverge "fp16 overflow (--lr 1e30, --compress fp16): exit 3" 3 "diverged" --writes r.json -- \
  "$ptrain" train @SHORT@ --optimizer sgd --lr 1e30 --compress fp16 --report r.json
new_case; expect -q diverge "async, every worker diverged: non-zero, report, no loss 0.0" 3 "diverged" --writes r.json \
  --lacks "loss 0.0000" -- "$ptrain" train @SHORT@ --strategy async --optimizer sgd --lr 1e30 --report r.json
new_case; expect diverge "ssp diverged" 3 "diverged" --writes r.json -- \
  "$ptrain" train @SHORT@ --strategy ssp --optimizer sgd --lr 1e30 --report r.json
new_case; expect diverge "ps-backup diverged" 3 "diverged" --writes r.json -- \
  "$ptrain" train @SHORT@ --strategy ps-backup --optimizer sgd --lr 1e30 --report r.json
new_case; expect -q diverge "shm hogwild, every thread diverged" 3 "diverged" --writes r.json --lacks "loss 0.0000" -- \
  "$ptrain" shm --data "$fm" --epochs 1 --strategy hogwild --optimizer sgd --lr 1e30 --report r.json --quiet
new_case; expect diverge "shm leashed diverged" 3 "diverged" --writes r.json -- \
  "$ptrain" shm --data "$fm" --epochs 1 --strategy leashed --optimizer sgd --lr 1e30 --report r.json --quiet

# ---------------------------------------------------------------- signals
new_case; expect -q signal "SIGTERM while writing checkpoints every step: no temporary file left" 143 "SIGTERM" \
  --writes-dir ck --signal TERM:4 -- "$ptrain" train --data "$fm" --epochs 100000 --workers 2 --hidden 512,512 --quiet \
  --checkpoint-dir ck --checkpoint-every 1
new_case; expect signal "SIGINT while writing checkpoints every step: no temporary file left" 130 "SIGINT" \
  --writes-dir ck --signal INT:4 -- "$ptrain" train --data "$fm" --epochs 100000 --workers 2 --hidden 512,512 --quiet \
  --checkpoint-dir ck --checkpoint-every 1
new_case; expect signal "SIGTERM during a sweep: its CSV holds whole rows, no temporary file" 143 "SIGTERM" \
  --writes-lines s.csv --signal TERM:4 -- \
  "$ptrain" sweep --data "$fm" --strategies hogwild --threads 2 --batch 16,32,64 --lr 0.01 --repetitions 20 --csv s.csv

# ---------------------------------------------------------------- MPI ranks
if [ ${#mpirun_cmd[@]} -gt 0 ]; then
  new_case; expect -q mpi "a rank that never arrives (straggler 10^6 times slower): a timeout naming it" 75 "rank(s) 1" -- \
    "${mpirun_cmd[@]}" -np 2 "$ptrain" train @SHORT@ --comm-timeout 3 --straggler 1:1000000
  new_case; expect mpi "--workers 3 under 2 ranks" 2 "--workers" -- "${mpirun_cmd[@]}" -np 2 "$ptrain" train @SHORT@ --workers 3
  new_case; expect mpi "ptrain shm under mpirun" 2 "mpirun" -- "${mpirun_cmd[@]}" -np 2 "$ptrain" shm --data "$fm" --epochs 1
  new_case; null_device
  expect mpi "--report a device under mpirun" 2 "--report" -- \
    "${mpirun_cmd[@]}" -np 2 "$ptrain" train @SHORT@ --report null
  new_case; expect mpi "a bad flag under mpirun" 2 "--epochs" -- "${mpirun_cmd[@]}" -np 2 "$ptrain" train @SHORT@ --epochs nan
fi
new_case; expect -q mpi "threads: a worker that never arrives: a timeout naming it" 75 "worker(s) 1" -- \
  "$ptrain" train @SHORT@ --comm-timeout 3 --straggler 1:1000000

# ---------------------------------------------------------------- simulate
sim=("$ptrain" simulate --workers 1,2,4)
new_case; expect -q simulate "--workers -1 (hung)" 2 "--workers" -- "$ptrain" simulate --workers -1
new_case; expect simulate "--workers 0" 2 "--workers" -- "$ptrain" simulate --workers 0
new_case; expect -q simulate "--workers 10000000000000 (a loop of 10^13)" 2 "--workers" -- "$ptrain" simulate --workers 10000000000000
new_case; expect simulate "--workers 1e300" 2 "--workers" -- "$ptrain" simulate --workers 1e300
new_case; expect simulate "--bandwidth nan" 2 "--bandwidth" -- "${sim[@]}" --bandwidth nan
new_case; expect simulate "--bandwidth inf" 2 "--bandwidth" -- "${sim[@]}" --bandwidth inf
new_case; expect simulate "--bandwidth -1" 2 "--bandwidth" -- "${sim[@]}" --bandwidth -1
new_case; expect simulate "--latency nan" 2 "--latency" -- "${sim[@]}" --latency nan
new_case; expect simulate "--latency 1e300" 2 "--latency" -- "${sim[@]}" --latency 1e300
new_case; expect simulate "--parameters nan" 2 "--parameters" -- "${sim[@]}" --parameters nan
new_case; expect simulate "--parameters -1" 2 "--parameters" -- "${sim[@]}" --parameters -1
new_case; expect simulate "--parameters 1e300" 2 "--parameters" -- "${sim[@]}" --parameters 1e300
new_case; expect simulate "--batch -1" 2 "--batch" -- "${sim[@]}" --batch -1
new_case; expect simulate "--batch 0" 2 "--batch" -- "${sim[@]}" --batch 0
new_case; expect simulate "--compute-per-sample inf" 2 "--compute-per-sample" -- "${sim[@]}" --compute-per-sample inf
new_case; expect simulate "--density 2" 2 "--density" -- "${sim[@]}" --density 2
new_case; expect simulate "--servers -1" 2 "--servers" -- "${sim[@]}" --servers -1
new_case; expect simulate "--backup -1" 2 "--backup" -- "${sim[@]}" --backup -1
new_case; expect simulate "--cores-per-rank nan" 2 "--cores-per-rank" -- "${sim[@]}" --cores-per-rank nan
new_case; expect simulate "--straggler-mean inf" 2 "--straggler-mean" -- "${sim[@]}" --straggler-mean inf
new_case; expect simulate "--exchange pipeline --schedule zigzag" 2 "--schedule: expected one of gpipe, 1f1b" -- \
  "${sim[@]}" --exchange pipeline --schedule zigzag
new_case; expect simulate "--exchange pipeline: 2 stage shares for 4 stages" 2 "--stage-shares: 2 shares for 4 stages" -- \
  "${sim[@]}" --workers 4 --exchange pipeline --stages 4 --stage-shares 1,2
new_case; expect simulate "--exchange pipeline: a stage share of 0" 2 "--stage-shares must each be > 0" -- \
  "${sim[@]}" --workers 4 --exchange pipeline --stages 2 --stage-shares 1,0
new_case; expect simulate "--microbatch-cost -1" 2 "--microbatch-cost" -- "${sim[@]}" --exchange pipeline --microbatch-cost -1
new_case; expect simulate "--hop-bandwidth nan" 2 "--hop-bandwidth" -- "${sim[@]}" --exchange pipeline --hop-bandwidth nan
new_case; expect simulate "--eager-limit -1" 2 "--eager-limit" -- "${sim[@]}" --exchange pipeline --eager-limit -1
new_case; expect simulate "--exchange carrier-pigeon" 2 "--exchange" -- "${sim[@]}" --exchange carrier-pigeon
new_case; expect simulate "--codec dgc (sparse)" 2 "--codec" -- "${sim[@]}" --codec dgc
new_case; null_device
expect simulate "--csv a device (a null device like /dev/null: never replaced)" 2 "--csv" -- "${sim[@]}" --csv null
new_case; mkfifo s.csv
expect simulate "--csv a FIFO" 2 "--csv" -- "${sim[@]}" --csv s.csv
new_case; mkfifo c.json
expect -q simulate "--calibrate a FIFO (hung)" 2 "c.json" -- "${sim[@]}" --calibrate c.json
new_case; expect simulate "--calibrate a report with no run" 2 "calibrate-no-run.json" -- \
  "${sim[@]}" --calibrate "$fx/plans/calibrate-no-run.json"
new_case; expect simulate "--calibrate /dev/zero" 2 "/dev/zero" -- "${sim[@]}" --calibrate /dev/zero
new_case; expect simulate "--calibrate-bandwidth nan" 2 "--calibrate-bandwidth" -- \
  "${sim[@]}" --calibrate "$fx/plans/calibrate-no-run.json" --calibrate-bandwidth nan
new_case; mkfifo costs.csv
expect simulate "--codec-costs a FIFO (hung)" 2 "costs.csv" -- "${sim[@]}" --codec fp16 --codec-costs costs.csv
new_case; expect simulate "--codec-costs with nan" 2 "codec-costs-bad.csv" -- \
  "${sim[@]}" --codec fp16 --codec-costs "$fx/plans/codec-costs-bad.csv"
new_case; expect simulate "--codec-costs ragged" 2 "codec-costs-ragged.csv" -- \
  "${sim[@]}" --codec fp16 --codec-costs "$fx/plans/codec-costs-ragged.csv"

# ---------------------------------------------------------------- bench allreduce
# @SHORT@ stands for the bench's short settings a case does not give itself
# (a case that gave --iters 0 after --iters 2 was refused for the flag given twice).
train_short=("${short[@]}")
short=(--sizes 4KiB --iters 2 --warmup 0)
ba=("$ptrain" bench allreduce @SHORT@)
new_case; expect -q bench "allreduce --ranks 100000 (aborted)" 2 "--ranks" -- "${ba[@]}" --ranks 100000
new_case; expect bench "allreduce --ranks -1" 2 "--ranks" -- "${ba[@]}" --ranks -1
new_case; expect bench "allreduce --iters 0" 2 "--iters" -- "${ba[@]}" --iters 0
new_case; expect bench "allreduce --iters -1" 2 "--iters" -- "${ba[@]}" --iters -1
new_case; expect bench "allreduce --warmup -1" 2 "--warmup" -- "${ba[@]}" --warmup -1
new_case; expect bench "allreduce --sizes 0" 2 "--sizes" -- "${ba[@]}" --sizes 0
new_case; expect bench "allreduce --sizes -4KiB" 2 "--sizes" -- "${ba[@]}" --sizes -4KiB
new_case; expect bench "allreduce --sizes nan" 2 "--sizes" -- "${ba[@]}" --sizes nan
new_case; expect -q bench "allreduce --sizes 900GiB (no memory holds it)" 2 "--sizes" -- "${ba[@]}" --sizes 900GiB
new_case; expect bench "allreduce --sizes 4MiB:4KiB (backwards)" 2 "--sizes" -- "${ba[@]}" --sizes 4MiB:4KiB
new_case; expect bench "allreduce --algo carrier-pigeon" 2 "--algo" -- "${ba[@]}" --algo carrier-pigeon
new_case; expect bench "allreduce --backend carrier-pigeon" 2 "--backend" -- "${ba[@]}" --backend carrier-pigeon
new_case; null_device
expect -q bench "allreduce --csv a device (a null device like /dev/null: never replaced)" 2 "--csv" -- "${ba[@]}" --ranks 2 --csv null
new_case; mkfifo b.csv
expect -q bench "allreduce --csv a FIFO (hung)" 2 "--csv" -- "${ba[@]}" --ranks 2 --csv b.csv
new_case; echo keep >target && ln -s target b.csv
expect bench "allreduce --csv a symlink" 2 "--csv" -- "${ba[@]}" --ranks 2 --csv b.csv

# ---------------------------------------------------------------- bench compress
short=(--sizes 4096 --iters 2 --warmup 0)
bc=("$ptrain" bench compress @SHORT@)
new_case; expect bench "compress --sizes 5G (past the codecs' 32-bit index)" 2 "--sizes" -- "${bc[@]}" --sizes 5G
new_case; expect -q bench "compress --sizes 4000M (no memory holds it)" 2 "--sizes" -- "${bc[@]}" --sizes 4000M
new_case; expect bench "compress --sizes -1" 2 "--sizes" -- "${bc[@]}" --sizes -1
new_case; expect bench "compress --codecs carrier-pigeon" 2 "--codecs" -- "${bc[@]}" --codecs carrier-pigeon
new_case; expect bench "compress --codecs , (none)" 2 "--codecs" -- "${bc[@]}" --codecs ,
new_case; expect bench "compress --iters 0" 2 "--iters" -- "${bc[@]}" --iters 0
new_case; expect bench "compress --warmup -1" 2 "--warmup" -- "${bc[@]}" --warmup -1
new_case; null_device
expect -q bench "compress --csv a device (a null device like /dev/null: never replaced)" 2 "--csv" -- "${bc[@]}" --csv null
new_case; mkfifo c.csv
expect bench "compress --csv a FIFO (hung)" 2 "--csv" -- "${bc[@]}" --csv c.csv
new_case; echo keep >target && ln -s target c.csv
expect -q bench "compress --csv a symlink (followed)" 2 "--csv" -- "${bc[@]}" --csv c.csv
new_case; mkdir c.csv
expect bench "compress --csv a directory" 2 "--csv" -- "${bc[@]}" --csv c.csv
short=("${train_short[@]}")

# ---------------------------------------------------------------- sweep
sw=("$ptrain" sweep --data "$fm" --strategies hogwild --threads 2 --batch 32 --lr 0.01 --repetitions 1 --epochs 1)
new_case; expect -q sweep "--threads -1" 2 "--threads" -- "${sw[@]}" --threads -1 --csv s.csv
new_case; expect sweep "--threads 100000" 2 "--threads" -- "${sw[@]}" --threads 100000 --csv s.csv
new_case; expect sweep "--batch -1" 2 "--batch" -- "${sw[@]}" --batch -1 --csv s.csv
new_case; expect sweep "--batch 0" 2 "--batch" -- "${sw[@]}" --batch 0 --csv s.csv
new_case; expect sweep "--lr nan" 2 "--lr" -- "${sw[@]}" --lr nan --csv s.csv
new_case; expect sweep "--lr -1" 2 "--lr" -- "${sw[@]}" --lr -1 --csv s.csv
new_case; expect sweep "--repetitions 0" 2 "--repetitions" -- "${sw[@]}" --repetitions 0 --csv s.csv
new_case; expect sweep "--repetitions 2000000000 (rows no memory holds)" 2 "--repetitions" -- \
  "${sw[@]}" --repetitions 2000000000 --csv s.csv
new_case; expect sweep "--strategies hybrid (not shared memory)" 2 "--strategies" -- "${sw[@]}" --strategies hybrid --csv s.csv
new_case; expect sweep "--csv '' (empty path)" 2 "--csv" -- "${sw[@]}" --csv ""
new_case; null_device
expect -q sweep "--csv a device (a null device like /dev/null: never replaced)" 2 "--csv" -- "${sw[@]}" --csv null
new_case; mkfifo s.csv
expect sweep "--csv a FIFO" 2 "--csv" -- "${sw[@]}" --csv s.csv
new_case; echo keep >target && ln -s target s.csv
expect sweep "--csv a symlink" 2 "--csv" -- "${sw[@]}" --csv s.csv
new_case; printf 'name,age\nbob,3\n' >s.csv
expect -q sweep "--csv an unrelated CSV (not clobbered)" 2 "--csv" -- "${sw[@]}" --csv s.csv
new_case; null_device
expect sweep "--summary-csv a device (a null device like /dev/null: never replaced)" 2 "--summary-csv" -- "${sw[@]}" --csv s.csv --summary-csv null
new_case; expect sweep "--csv in an unwritable place (/proc)" 2 "--csv" -- "${sw[@]}" --csv /proc/s.csv

# ---------------------------------------------------------------- eval
"$ptrain" train "${short[@]}" --model softmax --save "$T/model.pt" >/dev/null 2>&1
new_case; expect -q eval "--model missing" 2 "m.pt" -- "$ptrain" eval --model m.pt --data "$fm"
new_case; expect eval "--model /dev/null" 2 "/dev/null" -- "$ptrain" eval --model /dev/null --data "$fm"
new_case; mkfifo m.pt
expect -q eval "--model a FIFO" 2 "m.pt" -- "$ptrain" eval --model m.pt --data "$fm"
new_case; head -c 1000 "$T/model.pt" >m.pt
expect eval "--model truncated" 2 "m.pt" -- "$ptrain" eval --model m.pt --data "$fm"
new_case; cp "$fx/plans/plan-binary.json" m.pt
expect eval "--model not a model" 2 "m.pt" -- "$ptrain" eval --model m.pt --data "$fm"
new_case; expect -q eval "test images 27x27 for a model of 28x28" 2 "[1, 27, 27]" -- "$ptrain" eval --model "$T/model.pt" --data "$fx/fm27"
new_case; null_device
expect eval "--report a device (a null device like /dev/null: never replaced)" 2 "--report" -- "$ptrain" eval --model "$T/model.pt" --data "$fm" --report null
new_case; expect eval "--write-samples a missing directory" 2 "--write-samples" -- \
  "$ptrain" eval --model "$T/model.pt" --data "$fm" --write-samples nowhere
new_case; mkfifo features.npy
expect eval "--write-samples where features.npy is a FIFO" 2 "--write-samples" -- \
  "$ptrain" eval --model "$T/model.pt" --data "$fm" --write-samples .
new_case; ln -s /etc/passwd labels.npy
expect eval "--write-samples where labels.npy is a symlink" 2 "--write-samples" -- \
  "$ptrain" eval --model "$T/model.pt" --data "$fm" --write-samples .
new_case; data_with_images fifo
expect eval "data with a FIFO (training images unused)" 0 "" -- "$ptrain" eval --model "$T/model.pt" --data d --quiet

# ---------------------------------------------------------------- placement
# run.placement and run.topology (--placement, --topology): an unknown policy,
# a topology file that cannot be read or parsed, a description hwloc refuses,
# each one line naming the flag, before any training; old plans' "pin" read.
new_case; expect -q placement "--placement scatter (no such policy)" 2 "--placement" -- \
  "$ptrain" train @SHORT@ --placement scatter
new_case; expect placement "--pin (an older ptrain's: says what it is now)" 2 "--placement compact" -- \
  "$ptrain" train @SHORT@ --pin
new_case; expect placement "--placement '' (empty)" 2 "--placement" -- "$ptrain" train @SHORT@ --placement ""
new_case; expect placement "shm --placement bogus" 2 "--placement" -- \
  "$ptrain" shm --data "$fm" --train-samples 200 --epochs 1 --placement bogus --quiet
new_case; expect -q placement "--topology bogus:3 (hwloc refuses it)" 2 "--topology" -- \
  "$ptrain" train @SHORT@ --topology bogus:3
new_case; expect placement "--topology 'pack:1000 core:1000 pu:1000' (10^9 PUs: refused, not built)" 2 "--topology" -- \
  "$ptrain" train @SHORT@ --topology "pack:1000 core:1000 pu:1000"
new_case; expect placement "--topology '' (empty)" 2 "--topology" -- "$ptrain" train @SHORT@ --topology ""
new_case; expect placement "--topology missing.xml" 2 "--topology" -- "$ptrain" train @SHORT@ --topology missing.xml
new_case; printf '<topology><object type=' >t.xml
expect placement "--topology a truncated XML file" 2 "--topology" -- "$ptrain" train @SHORT@ --topology t.xml
new_case; : >t.xml
expect placement "--topology an empty XML file" 2 "--topology" -- "$ptrain" train @SHORT@ --topology t.xml
new_case; $py -c "import sys; n = 100000; sys.stdout.write('<topology>' + '<object>' * n + '</object>' * n + '</topology>')" >t.xml
expect placement "--topology an XML file nested 100000 deep (hwloc's reader would recurse)" 2 "--topology" -- \
  "$ptrain" train @SHORT@ --topology t.xml
new_case; mkfifo t.xml
expect -q placement "--topology a FIFO (refused, not waited on)" 2 "--topology" -- \
  "$ptrain" train @SHORT@ --topology t.xml
new_case; ln -s /dev/zero t.xml
expect placement "--topology a symlink to /dev/zero" 2 "--topology" -- "$ptrain" train @SHORT@ --topology t.xml
new_case; mkdir t.xml
expect placement "--topology a directory" 2 "--topology" -- "$ptrain" train @SHORT@ --topology t.xml
new_case; printf '{"run": {"pin": "yes"}}' >p.json
expect placement "--config with run.pin not a switch" 2 "run.pin" -- "$ptrain" train --config p.json @SHORT@
new_case; printf '{"run": {"pin": true, "placement": "spread"}}' >p.json
expect placement "--config with run.pin and run.placement" 2 "run.pin" -- "$ptrain" train --config p.json @SHORT@
new_case; printf '{"run": {"pin": false}}' >p.json
expect placement "--config with an older plan's run.pin false is placement none (control)" 0 "" \
  --has '"placement": "none"' -- "$ptrain" train --config p.json @SHORT@ --print-plan
new_case; expect -q placement "--placement spread on a synthetic topology trains (control)" 0 "" -- \
  "$ptrain" train @SHORT@ --model softmax --placement spread --topology "pack:2 node:1 core:2 pu:1"

# ---------------------------------------------------------------- switches
# A switch takes true/false, 1/0, yes/no or on/off, and means what it says.
for flag in --standardize --overlap --dgc-masking --dgc-accumulation --dgc-dense-biases \
  --topk-error-feedback --async-lr-divide; do
  case $flag in
    --dgc-*) extra=(--compress dgc) ;;
    --topk-*) extra=(--compress topk) ;;
    --async-*) extra=(--strategy async) ;;
    *) extra=() ;;
  esac
  q=; [ $flag = --standardize ] && q=-q
  new_case; expect $q switch "$flag=bogus (aborted in stoll)" 2 "$flag" -- "$ptrain" train @SHORT@ "${extra[@]}" "$flag=bogus"
done
new_case; expect switch "--overlap=2 (a count, not a switch value)" 2 "--overlap" -- "$ptrain" train @SHORT@ --overlap=2
new_case; expect -q switch "--overlap= (empty: was taken as on)" 2 "--overlap=" -- "$ptrain" train @SHORT@ --overlap=
new_case; expect switch "--no-overlap=bogus" 2 "--no-overlap" -- "$ptrain" train @SHORT@ --no-overlap=bogus
new_case; expect switch "--print-plan=bogus" 2 "--print-plan" -- "$ptrain" train @SHORT@ --print-plan=bogus
new_case; expect switch "simulate --overlap=bogus" 2 "--overlap" -- "$ptrain" simulate --overlap=bogus
new_case; expect switch "eval --quiet=bogus" 2 "--quiet" -- "$ptrain" eval --model m.pt --data "$fm" --quiet=bogus
new_case; expect -q switch "--standardize=false is off (was on)" 0 "" --has '"standardize": false' -- \
  "$ptrain" train @SHORT@ --standardize=false --print-plan
new_case; expect switch "--overlap=0 is off, the last one given (was on)" 0 "" --has '"overlap": false' -- \
  "$ptrain" train @SHORT@ --overlap --overlap=0 --print-plan
new_case; expect switch "--overlap=no is off" 0 "" --has '"overlap": false' -- \
  "$ptrain" train @SHORT@ --overlap=no --print-plan
new_case; expect switch "--no-standardize=false is on" 0 "" --has '"standardize": true' -- \
  "$ptrain" train @SHORT@ --no-standardize=false --print-plan

# ---------------------------------------------------------------- options a command does not use
sw=("$ptrain" sweep --data "$fm" --strategies hogwild --threads 2 --batch 16 --lr 0.05 --repetitions 1 --epochs 1
  --csv s.csv)
new_case; expect -q unused "sweep --backup -1 (no swept strategy has backups: was accepted)" 2 "--backup" -- \
  "${sw[@]}" --backup -1
new_case; expect unused "sweep --servers text" 2 "--servers" -- "${sw[@]}" --servers text
new_case; expect unused "sweep --staleness nan" 2 "--staleness" -- "${sw[@]}" --staleness nan
new_case; expect unused "sweep --stale-policy drop:abc" 2 "--stale-policy" -- "${sw[@]}" --stale-policy drop:abc
new_case; expect unused "sweep --warmup-single text" 2 "--warmup-single" -- "${sw[@]}" --warmup-single text
new_case; expect unused "sweep --allreduce bogus-value" 2 "--allreduce" -- "${sw[@]}" --allreduce bogus-value
new_case; expect unused "sweep --compress dgc (shared memory compresses nothing)" 2 "--compress" -- "${sw[@]}" --compress dgc
new_case; expect -q unused "sweep --lr inf (ran the grid, every row crashed)" 2 "--lr" -- \
  "$ptrain" sweep --data "$fm" --strategies hogwild --threads 2 --batch 16 --lr inf --repetitions 1 --csv s.csv
new_case; expect -q unused "shm --threads 2 --workers -1 (--workers was ignored)" 2 "--workers" -- \
  "$ptrain" shm --data "$fm" --epochs 1 --threads 2 --workers -1 --quiet
new_case; expect unused "shm --workers 3 (ptrain shm counts --threads)" 2 "--workers" -- \
  "$ptrain" shm --data "$fm" --epochs 1 --workers 3 --quiet
new_case; expect unused "shm --straggler 1:2 (not a shared-memory option)" 2 "--straggler" -- \
  "$ptrain" shm --data "$fm" --epochs 1 --straggler 1:2 --quiet
new_case; expect unused "shm --transport gloo" 2 "--transport" -- "$ptrain" shm --data "$fm" --epochs 1 --transport gloo --quiet
new_case; expect -q unused "simulate --local-workers -1 (gave the results of 2)" 2 "--local-workers" -- \
  "$ptrain" simulate --workers 4 --exchange hierarchical --local-workers -1
new_case; expect unused "--time-limit 5 with hybrid" 2 "--time-limit" -- "$ptrain" train @SHORT@ --time-limit 5
new_case; expect unused "--log-every 3 with hogwild (was ignored)" 2 "--log-every" -- \
  "$ptrain" train @SHORT@ --strategy hogwild --log-every 3

# ---------------------------------------------------------------- empty values
new_case; expect -q empty "simulate --backward-fraction '' (was the default)" 2 "--backward-fraction" -- \
  "$ptrain" simulate --backward-fraction ""
new_case; expect empty "simulate --latency ''" 2 "--latency" -- "$ptrain" simulate --latency ""
new_case; expect empty "simulate --straggler-mean ''" 2 "--straggler-mean" -- "$ptrain" simulate --straggler-mean ""
new_case; expect empty "simulate --latency= " 2 "--latency" -- "$ptrain" simulate --latency=
new_case; expect -q empty "bench allreduce --ranks ''" 2 "--ranks" -- "$ptrain" bench allreduce --sizes 4KiB --ranks ""
new_case; expect empty "bench allreduce --warmup ''" 2 "--warmup" -- "$ptrain" bench allreduce --sizes 4KiB --warmup ""
new_case; expect empty "bench compress --warmup ''" 2 "--warmup" -- "$ptrain" bench compress --sizes 4096 --warmup ""
new_case; expect empty "sweep --threads ''" 2 "--threads" -- \
  "$ptrain" sweep --data "$fm" --strategies hogwild --threads "" --csv s.csv
new_case; expect empty "train --batch ''" 2 "--batch" -- "$ptrain" train @SHORT@ --batch ""

# ---------------------------------------------------------------- help
new_case; expect -q help "shm --help lists the shared-memory strategies only, with shm's defaults" 0 "" \
  --lacks "hybrid:" --lacks "--straggler" --lacks "--compress" --has "leashed]" --has "[default: 16]" -- \
  "$ptrain" shm --help
new_case; expect help "train --help says which strategies stop on time" 0 "" \
  --has "strategies that stop on time: " -- "$ptrain" train --help
new_case; expect help "sweep --help has no parameter-server option" 0 "" --lacks "--servers" --lacks "--staleness" -- \
  "$ptrain" sweep --help
new_case; expect -q help "--classes 2147483647 names --classes (blamed --hidden)" 2 "--classes" -- \
  "$ptrain" train "${npy_set[@]}" --classes 2147483647
new_case; expect -q help "a plan file with a million unknown keys: one short line (was 37 MB)" 2 "more" -- \
  "$ptrain" train @SHORT@ --config "$fx/plans/plan-million-keys.json"

# ---------------------------------------------------------------- models that do not fit the data
if [ -f "$fx/models/seven-outputs.pt" ]; then
  new_case; expect -q model "a model of 7 outputs on 10 classes (exit 75 at the first step)" 2 "seven-outputs.pt" -- \
    "$ptrain" train @SHORT@ --model "$fx/models/seven-outputs.pt"
  new_case; expect model "a model of 100 inputs on 28x28 images" 2 "wrong-input.pt" -- \
    "$ptrain" train @SHORT@ --model "$fx/models/wrong-input.pt"
  new_case; expect model "shm: a model of 7 outputs" 2 "seven-outputs.pt" -- \
    "$ptrain" shm --data "$fm" --epochs 1 --model "$fx/models/seven-outputs.pt" --quiet
fi

# ---------------------------------------------------------------- files a refused run leaves
new_case; expect -q files "sweep on a missing data directory: no CSV left" 2 "nowhere" -- \
  "$ptrain" sweep --data nowhere --strategies hogwild --threads 2 --batch 16 --lr 0.05 --repetitions 1 --csv s.csv
new_case; data_with_images trunc-data
expect files "sweep on truncated training images: no CSV left" 2 "train-images" -- \
  "$ptrain" sweep --data d --strategies hogwild --threads 2 --batch 16 --lr 0.05 --repetitions 1 --csv s.csv
new_case; mkdir d && cp "$fm"/* d/ && cp "$fx/idx/labels-out-of-range" d/train-labels-idx1-ubyte
expect files "sweep on a label out of range: no CSV left" 2 "train-labels" -- \
  "$ptrain" sweep --data d --strategies hogwild --threads 2 --batch 16 --lr 0.05 --repetitions 1 --csv s.csv
new_case; echo "not a model" >m.pt
expect files "sweep with a model file that is not TorchScript: no CSV left" 2 "m.pt" -- \
  "$ptrain" sweep --data "$fm" --model m.pt --strategies hogwild --threads 2 --batch 16 --lr 0.05 --repetitions 1 \
  --csv s.csv
new_case; expect files "sweep on npy labels out of range: no CSV left" 2 "train-y-negative.npy" -- \
  "$ptrain" sweep --data-set npy --train-features "$(npy train-x.npy)" --train-labels "$(npy train-y-negative.npy)" \
  --test-features "$(npy test-x.npy)" --test-labels "$(npy test-y.npy)" --model softmax --strategies hogwild \
  --threads 2 --batch 16 --lr 0.05 --repetitions 1 --csv s.csv
new_case; "$ptrain" train --data "$fm" --epochs 1 --batch 32 --workers 2 --checkpoint-dir ck --quiet >/dev/null 2>&1
cp -r ck copy
expect -q files "--resume COPY checkpoints into the copy (wrote into the original)" 0 "" --writes-dir copy \
  --has "checkpoints  copy" -- "$ptrain" train --resume copy --epochs 2

# ---------------------------------------------------------------- one refusal, one line, under mpirun
if [ ${#mpirun_cmd[@]} -gt 0 ]; then
  new_case; expect -q mpi "mpirun -q -np 3 ptrain train --strategy sequential: one line (was one a rank and an abort)" \
    2 "sequential" --whole-stderr -- "${mpirun_cmd[@]}" -q -np 3 "$ptrain" train --data "$fm" --strategy sequential
  new_case; expect mpi "mpirun -q -np 3, a bad flag: one line" 2 "--epochs" --whole-stderr -- \
    "${mpirun_cmd[@]}" -q -np 3 "$ptrain" train --data "$fm" --epochs nan
  new_case; expect mpi "mpirun -q -np 2 ptrain sweep: one line" 2 "mpirun" --whole-stderr -- \
    "${mpirun_cmd[@]}" -q -np 2 "$ptrain" sweep --data "$fm" --csv s.csv
fi
