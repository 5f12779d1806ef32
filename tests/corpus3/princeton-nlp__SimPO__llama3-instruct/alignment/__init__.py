__version__ = "0.3.0.dev0"

from .configs import DataArguments, DPOConfig, H4ArgumentParser, ModelArguments, SFTConfig
from .data import apply_chat_template, get_datasets
# from .decontaminate import decontaminate_humaneval
from .model_utils import (
    get_checkpoint,
    get_kbit_device_map,
    get_peft_config,
    get_quantization_config,
    get_tokenizer,
    is_adapter_model,
)


__all__ = [
    "DataArguments",
    "DPOConfig",
    "H4ArgumentParser",
    "ModelArguments",
    "SFTConfig",
    "apply_chat_template",
    "get_datasets",
    "decontaminate_humaneval",
    "get_checkpoint",
    "get_kbit_device_map",
    "get_peft_config",
    "get_quantization_config",
    "get_tokenizer",
    "is_adapter_model",
]
