from .AbsArguments import (
    AbsEmbedderDataArguments,
    AbsEmbedderModelArguments,
    AbsEmbedderTrainingArguments,
)
from .AbsDataset import (
    AbsEmbedderCollator, AbsEmbedderSameDatasetCollator,
    AbsEmbedderSameDatasetTrainDataset,
    AbsEmbedderTrainDataset,
    EmbedderTrainerCallbackForDataRefresh,
)
from .AbsModeling import AbsEmbedderModel, EmbedderOutput
from .AbsTrainer import AbsEmbedderTrainer
from .AbsRunner import AbsEmbedderRunner


__all__ = [
    "AbsEmbedderModelArguments",
    "AbsEmbedderDataArguments",
    "AbsEmbedderTrainingArguments",
    "AbsEmbedderModel",
    "AbsEmbedderTrainer",
    "AbsEmbedderRunner",
    "AbsEmbedderTrainDataset",
    "AbsEmbedderCollator",
    "AbsEmbedderSameDatasetTrainDataset",
    "AbsEmbedderSameDatasetCollator",
    "EmbedderOutput",
    "EmbedderTrainerCallbackForDataRefresh",
]
