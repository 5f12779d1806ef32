# The HF performance guide's script (huggingface/transformers docs/source/en/perf_train_gpu_one.mdx at
# 0016acf7, 2022-01-11): 512 random sequences of 512 tokens and binary labels, bert-large-uncased with a
# sequence-classification head moved to the GPU, and the Trainer. Its TrainingArguments are in train.yaml
# (the guide writes them inline, per experiment).
import sys

import numpy as np
import yaml
from datasets import Dataset
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments

seq_len, dataset_size = 512, 512
dummy_data = {
    "input_ids": np.random.randint(100, 30000, (dataset_size, seq_len)),
    "labels": np.random.randint(0, 1, (dataset_size)),
}
ds = Dataset.from_dict(dummy_data)
ds.set_format("pt")

with open(sys.argv[1]) as f:
    settings = yaml.safe_load(f)
fields = TrainingArguments.__dataclass_fields__
training_args = TrainingArguments(**{k: v for k, v in settings.items() if k in fields})
model = AutoModelForSequenceClassification.from_pretrained("bert-large-uncased").to("cuda")
trainer = Trainer(model=model, args=training_args, train_dataset=ds)
result = trainer.train()
