#!/usr/bin/env bash
# finetune/finetune_lora_single_gpu.sh
python finetune.py \
    --model_name_or_path ./Qwen-1_8B \
    --data_path data.json \
    --bf16 True \
    --output_dir output_qwen \
    --num_train_epochs 5 \
    --per_device_train_batch_size 1 \
    --gradient_accumulation_steps 8 \
    --model_max_length 2048 \
    --gradient_checkpointing True \
    --learning_rate 3e-4 \
    --weight_decay 0.1 \
    --adam_beta2 0.95 \
    --warmup_ratio 0.01 \
    --lr_scheduler_type cosine \
    --lazy_preprocess True \
    --optim adamw_torch \
    --use_lora \
    --lora_r 64 \
    --lora_alpha 16 \
    --lora_dropout 0.05 \
    --lora_target_modules c_attn c_proj w1 w2
