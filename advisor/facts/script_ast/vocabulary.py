"""The names the analyser recognises: rank guards, rank expressions, side-effect calls, exits."""

from __future__ import annotations

import re

# attributes / zero-argument methods that are true on exactly one process
GUARD_ATTRS = frozenset(
    {
        "is_main_process",
        "is_local_main_process",
        "is_last_process",
        "is_world_process_zero",
        "is_local_process_zero",
        "is_global_zero",
        "should_save",
        "should_log",
        "is_master",
        "is_master_process",
        "is_rank_zero",
        "is_rank_0",
        "is_master_ordinal",
    }
)
# functions (or methods) whose call result is true on exactly one process
GUARD_FUNCS = GUARD_ATTRS | {"is_rank0", "is_main", "is_primary", "is_main_rank", "is_master_rank"}
# bare names conventionally holding such a flag
GUARD_NAMES = frozenset(
    {
        "is_main_process",
        "is_local_main_process",
        "is_world_process_zero",
        "is_local_process_zero",
        "is_global_zero",
        "is_main",
        "is_master",
        "is_master_process",
        "master_process",
        "main_process",
        "is_rank_zero",
        "is_rank0",
        "is_rank_0",
    }
)
# names / attributes holding a process rank
RANK_NAMES = frozenset(
    {
        "rank",
        "local_rank",
        "global_rank",
        "world_rank",
        "ddp_rank",
        "ddp_local_rank",
        "process_index",
        "local_process_index",
        "rank_id",
        "proc_rank",
        "process_rank",
        "gpu_rank",
    }
)
RANK_FUNCS = frozenset(
    {
        "get_rank",
        "get_local_rank",
        "get_global_rank",
        "get_world_rank",
        "get_ordinal",
        "global_ordinal",
        "local_ordinal",
    }
)
ENV_RANK_KEYS = frozenset(
    {
        "RANK",
        "LOCAL_RANK",
        "SLURM_PROCID",
        "SLURM_LOCALID",
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "PMI_RANK",
        "PMIX_RANK",
    }
)
MAIN_RANK_VALUES = frozenset({0, -1, "0", "-1"})

GUARD_DECORATORS = frozenset(
    {
        "on_main_process",
        "on_local_main_process",
        "on_last_process",
        "on_process",
        "on_local_process",
        "rank_zero_only",
        "main_process_only",
        "master_only",
        "rank_zero",
        "on_rank_zero",
    }
)

TRAINER_RANK_AWARE = frozenset(
    {
        "save_model",
        "push_to_hub",
        "save_state",
        "save_metrics",
        "create_model_card",
        "save_checkpoint",
        "log_metrics",
    }
)
ACCELERATOR_RANK_AWARE = frozenset({"save", "save_model", "save_state"})

EXIT_CALLS = frozenset({"sys.exit", "exit", "quit", "os._exit", "os.abort"})

# fully-qualified callee (after import aliases) -> kind
QUALIFIED: dict[str, str] = {
    "torch.save": "torch_save",
    "safetensors.torch.save_file": "safetensors_save",
    "safetensors.torch.save_model": "safetensors_save",
    "safetensors.numpy.save_file": "safetensors_save",
    "numpy.save": "numpy_save",
    "numpy.savez": "numpy_save",
    "numpy.savez_compressed": "numpy_save",
    "numpy.savetxt": "numpy_save",
    "os.makedirs": "makedirs",
    "os.mkdir": "mkdir",
    "shutil.copy": "shutil_copy",
    "shutil.copy2": "shutil_copy",
    "shutil.copyfile": "shutil_copy",
    "shutil.copytree": "shutil_copy",
    "shutil.move": "shutil_move",
    "shutil.rmtree": "rmtree",
    "os.remove": "remove",
    "os.unlink": "remove",
    "os.rename": "remove",
    "os.replace": "remove",
    "logging.FileHandler": "log_file",
    "logging.handlers.RotatingFileHandler": "log_file",
    "logging.handlers.TimedRotatingFileHandler": "log_file",
    "logging.handlers.WatchedFileHandler": "log_file",
    "wandb.init": "wandb_init",
    "torch.utils.tensorboard.SummaryWriter": "tensorboard_writer",
    "tensorboardX.SummaryWriter": "tensorboard_writer",
    "huggingface_hub.upload_folder": "push_to_hub",
    "huggingface_hub.upload_file": "push_to_hub",
}
# open-like callables whose mode is the second positional argument
OPEN_FUNCS = frozenset(
    {"open", "io.open", "codecs.open", "gzip.open", "bz2.open", "lzma.open", "builtins.open"}
)
# attribute calls flagged whatever the receiver (unless rank-aware, see above)
ATTR_KINDS: dict[str, str] = {
    "save_to_disk": "save_to_disk",
    "push_to_hub": "push_to_hub",
    "upload_folder": "push_to_hub",
    "upload_file": "push_to_hub",
    "upload_large_folder": "push_to_hub",
    "save_pretrained": "save_pretrained",
    "save_model": "save_model",
    "mkdir": "mkdir",
    "makedirs": "makedirs",
    "write_text": "open_write",
    "write_bytes": "open_write",
    "FileHandler": "log_file",
    "RotatingFileHandler": "log_file",
    "TimedRotatingFileHandler": "log_file",
    "SummaryWriter": "tensorboard_writer",
}
# dataframe / dataset writers: only a side effect when given a destination
TO_FILE_KINDS: dict[str, str] = {
    "to_csv": "to_csv",
    "to_json": "to_json",
    "to_parquet": "to_parquet",
    "to_json_file": "to_json",
    "save_to_json": "to_json",
}
TO_FILE_PATH_KWARGS = frozenset({"path", "path_or_buf", "path_or_paths", "json_file_path", "fname"})
MODE_RE = re.compile(r"^[rwxabtU+]{1,4}$")
NEWLINE_RE = re.compile(r"\r\n|\r|\n")

BranchGuards = tuple[bool, bool]  # (only main when the test is true, only main when the test is false)
NEITHER: BranchGuards = (False, False)
