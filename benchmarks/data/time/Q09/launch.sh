#!/usr/bin/env bash
# finetune/finetune_ds.sh, one GPU (README: full-parameter 1.8B on 1 GPU)
torchrun --nproc_per_node 1 finetune.py \
    --model_name_or_path ./Qwen-1_8B \
    --data_path data.json \
    --bf16 True \
    --output_dir output_qwen \
    --num_train_epochs 5 \
    --per_device_train_batch_size 1 \
    --gradient_accumulation_steps 8 \
    --model_max_length 4096 \
    --gradient_checkpointing True \
    --learning_rate 1e-5 \
    --weight_decay 0.1 \
    --adam_beta2 0.95 \
    --warmup_ratio 0.01 \
    --lr_scheduler_type cosine \
    --lazy_preprocess True \
    --optim adamw_torch \
    --deepspeed ds_config_zero2.json
