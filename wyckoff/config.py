"""WYCKOFF_HOME, the validated `wyckoff.json`, API-key handling and atomic 0600 writes.

The config file is only ever replaced whole, through a temporary file and `os.replace`,
so a crash mid-write leaves the previous version; a command that changes it reads and
writes it under a lock (`locked`), so parallel commands never lose each other's updates. A
file that fails to parse is reported and never rewritten.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from wyckoff.errors import ConfigError, InvalidField, describe_os_error, os_error_cause

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

CONFIG_FILE = "wyckoff.json"
PROVIDERS = ("claude", "openai", "gemini")
MODEL_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
DASK_ADDRESS = re.compile(r"(tcp|tls)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}")
PRIVATE_UMASK = 0o077  # folders 0700, files 0600


def wyckoff_home() -> Path:
    """The folder that holds everything Wyckoff writes: created on demand and kept private
    (folders 0700, files 0600), also when it already existed with looser modes."""
    os.umask(PRIVATE_UMASK)  # everything this process creates from now on is owner-only
    home = Path(os.environ.get("WYCKOFF_HOME") or Path.home() / ".wyckoff").expanduser()
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ConfigError(
            f"数据目录 {home} 无法使用（{os_error_cause(exc)}）：请把 WYCKOFF_HOME 设为一个可写的文件夹。"
        ) from None
    if not os.access(home, os.W_OK | os.X_OK):
        raise ConfigError(
            f"数据目录 {home} 不可写：请检查权限，或把 WYCKOFF_HOME 设为可写的文件夹。"
        )
    if home.stat().st_mode & 0o077:
        make_private(home)
    return home


def make_private(root: Path) -> None:
    """Owner-only modes for `root` and everything in it (symlinks are left alone)."""
    try:
        for folder, _, files in os.walk(root):
            os.chmod(folder, 0o700)
            for name in files:
                path = os.path.join(folder, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o600)
    except OSError as exc:
        raise ConfigError(
            f"无法把 {exc.filename} 设为仅本人可读写（{os_error_cause(exc)}）：WYCKOFF_HOME 里存有密钥和会话，"
            "请把它设为一个属于你的目录。"
        ) from None


class ModelConfig(BaseModel):
    """One configured model: where it lives, how to authenticate, what it costs."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=MODEL_ID_PATTERN)
    provider: Literal["claude", "openai", "gemini"]
    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    context_window: int | None = Field(default=None, ge=1024)
    max_output_tokens: int | None = Field(default=None, ge=1)
    thinking_budget_tokens: int | None = Field(default=None, ge=1024)
    input_per_1m: float | None = Field(default=None, ge=0)
    output_per_1m: float | None = Field(default=None, ge=0)
    cache_read_per_1m: float | None = Field(default=None, ge=0)
    # Set only for models found in the environment, never saved.
    detected_from_env: bool = Field(default=False, exclude=True)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^\s/]+", value):
            raise ValueError("必须以 http:// 或 https:// 开头")
        return value

    def resolved_api_key(self) -> str | None:
        """The key itself: stored in the file, or read from the named environment variable."""
        if self.api_key:
            return self.api_key
        if self.api_key_env:
            return os.environ.get(self.api_key_env) or None
        return None

    def key_source(self) -> str:
        """Where the key comes from, for display; never any character of the key."""
        if self.api_key:
            return "已保存在配置中"
        if self.api_key_env:
            state = "已设置" if os.environ.get(self.api_key_env) else "未设置"
            return f"环境变量 {self.api_key_env}（{state}）"
        return "无"


class DataConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: Literal["auto", "tushare", "akshare", "baostock", "demo", "import"] = "auto"
    tushare_token: str | None = None
    tushare_url: str | None = None


class MemoryConfig(BaseModel):
    """Long-term memory settings. `extract_after_ask`: a `wyckoff ask` that used a tool makes
    one more model call at exit to extract memories (and, when due, one to refresh playbooks
    and the persona); `ask --no-memory` turns both off for one question."""

    model_config = ConfigDict(extra="forbid")

    extract_after_ask: bool = True


class SweepConfig(BaseModel):
    """Where parameter sweeps run: the user's choice (`wyckoff backtest cluster`), never the
    model's. A cluster runs the code it is given and its answers are unpickled here."""

    model_config = ConfigDict(extra="forbid")

    cluster: str | None = None
    workers: int | None = Field(default=None, ge=1, le=1024)  # local processes; None: per core

    @field_validator("cluster")
    @classmethod
    def _dask_address(cls, value: str | None) -> str | None:
        if value is not None and not DASK_ADDRESS.fullmatch(value):
            raise ValueError("集群地址要写成 tcp://主机:端口，如 tcp://192.168.1.5:8786")
        return value


class BrokerFeesConfig(BaseModel):
    """A broker's commission (stamp duty and the transfer fee are the law's, by date)."""

    model_config = ConfigDict(extra="forbid")

    commission_rate: float = Field(default=0.00025, ge=0, le=0.003)  # 0.3% is the legal cap
    min_commission: float = Field(default=5.0, ge=0, le=100)


class LedgerConfig(BaseModel):
    """The fee schedules of the user's brokers and which one the ledger charges."""

    model_config = ConfigDict(extra="forbid")

    broker: str | None = None
    brokers: dict[str, BrokerFeesConfig] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _broker_exists(self) -> LedgerConfig:
        if self.broker is not None and self.broker not in self.brokers:
            raise ValueError(f"ledger.broker 指向 brokers 里没有的券商 '{self.broker}'")
        return self

    def fees(self) -> BrokerFeesConfig:
        return self.brokers[self.broker] if self.broker else BrokerFeesConfig()


class WyckoffConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    models: list[ModelConfig] = Field(default_factory=list)
    default: str | None = None
    fallback: str | None = None
    stream_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    data: DataConfig = Field(default_factory=DataConfig)
    sweep: SweepConfig | None = None
    ledger: LedgerConfig | None = None
    memory: MemoryConfig = Field(default_factory=MemoryConfig)

    @model_validator(mode="after")
    def _references_exist(self) -> WyckoffConfig:
        ids = [m.id for m in self.models]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"模型 id 重复：{', '.join(duplicates)}")
        for role in ("default", "fallback"):
            ref = getattr(self, role)
            if ref is not None and ref not in ids:
                raise ValueError(f"{role} 指向不存在的模型 '{ref}'")
        return self

    def find(self, model_id: str) -> ModelConfig | None:
        return next((m for m in self.models if m.id == model_id), None)

    def upsert_model(
        self, model_id: str, *, make_default: bool = False, **fields: Any
    ) -> WyckoffConfig:
        """This config with model `model_id` added, or updated in place: the given fields
        (None = keep) over the stored ones, and a new key source replaces the other. The
        default stays the one in use unless `make_default`. Raises ConfigError when the
        result is not a valid model (InvalidField: which field, what is wrong)."""
        existing = self.find(model_id)
        merged = existing.model_dump(exclude={"detected_from_env"}) if existing else {}
        merged.update({k: v for k, v in fields.items() if v is not None}, id=model_id)
        if fields.get("api_key"):
            merged["api_key_env"] = None
        if fields.get("api_key_env"):
            merged["api_key"] = None
        try:
            model = ModelConfig.model_validate(merged)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise InvalidField(
                f"模型参数有误：{describe_validation_error(exc)}。",
                field=".".join(str(part) for part in first["loc"]),
                problem=describe_pydantic_error(first),
            ) from None
        models = [model if m.id == model_id else m for m in self.models]
        if existing is None:
            models.append(model)
        default = model_id if make_default else self.default or models[0].id
        return self.model_copy(update={"models": models, "default": default})


def config_path(home: Path | None = None) -> Path:
    return (home or wyckoff_home()) / CONFIG_FILE


def load_config(home: Path | None = None) -> WyckoffConfig:
    """Read and validate `wyckoff.json`; a missing file is an empty configuration."""
    path = config_path(home)
    try:
        data = read_json_file(path)
    except FileNotFoundError:
        return WyckoffConfig()
    try:
        config = WyckoffConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(
            f"配置文件 {path} 有误：{describe_validation_error(exc, WyckoffConfig)}。"
            "请修正该文件后重试；Wyckoff 不会改写它。"
        ) from None
    remember_secrets(*(m.resolved_api_key() for m in config.models), config.data.tushare_token)
    return config


def read_json_file(path: Path) -> Any:
    """The JSON a config file holds. A missing file raises FileNotFoundError; anything else
    wrong with it is a ConfigError naming the file in one sentence."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a folder, or a FIFO that would hang
            raise ConfigError(
                f"配置文件 {path} 不是普通文件（是文件夹、管道或设备）：请把它移走或删除后重试。"
            )
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ConfigError(describe_os_error(exc, "读取配置文件", path)) from None
    except UnicodeDecodeError:
        raise ConfigError(
            f"配置文件 {path} 不是 UTF-8 编码的文本：请用 UTF-8 保存，或删除该文件后重试。"
        ) from None
    try:
        return json.loads(raw)
    except RecursionError:
        raise ConfigError(
            f"配置文件 {path} 的 JSON 嵌套过深，不是 Wyckoff 的配置：请修正或删除该文件后重试。"
        ) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"配置文件 {path} 不是有效的 JSON（第 {exc.lineno} 行第 {exc.colno} 列：{exc.msg}）。"
            "请修正或删除该文件后重试；Wyckoff 不会改写它。"
        ) from None


def describe_validation_error(exc: ValidationError, root: type[BaseModel] | None = None) -> str:
    """The first problem of a pydantic error as one short phrase: `models.0.provider: ...`;
    an unknown key of `root`'s file also says which keys that place takes."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "顶层"
    problem = describe_pydantic_error(first)
    if first["type"] == "extra_forbidden" and root is not None:
        known = section_keys(root, first["loc"][:-1])
        problem += f"（这里可用的有：{'、'.join(known)}）" if known else ""
    return f"{where}：{problem}"


def section_keys(root: type[BaseModel], path: tuple[int | str, ...]) -> list[str]:
    """The keys the section at `path` (as pydantic locates it: `ledger.brokers.华泰`) takes."""
    model, parts = root, list(path)
    while parts:
        field = model.model_fields.get(str(parts.pop(0)))
        inner, keyed = _section_model(field.annotation) if field else (None, False)
        if inner is None:
            return []
        if keyed and parts:
            parts.pop(0)  # a list index or a dict key
        model = inner
    return [name for name, field in model.model_fields.items() if not field.exclude]


def _section_model(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The model a field holds, and whether it holds it in a list or dict (one level)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    for arg in get_args(annotation):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg, get_origin(annotation) in (list, dict)
    return None, False


def describe_pydantic_error(error: ErrorDetails) -> str:
    """One pydantic error (an item of `exc.errors()`) as a short Chinese phrase."""
    ctx = error.get("ctx") or {}
    kind = error["type"]
    if kind in PYDANTIC_PHRASES:
        return PYDANTIC_PHRASES[kind].format(**ctx).replace("' or '", "', '")
    if kind in ("value_error", "assertion_error"):  # our validators' own Chinese sentences
        return error["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return "取值不符合要求"  # never pydantic's English


PYDANTIC_PHRASES = {
    "float_parsing": "需要一个数字",
    "float_type": "需要一个数字",
    "finite_number": "必须是有限的数（不能是 inf 或 nan）",
    "int_parsing": "需要一个整数",
    "int_type": "需要一个整数",
    "int_from_float": "需要一个整数",
    "bool_parsing": "需要 true 或 false",
    "greater_than": "必须大于 {gt}",
    "greater_than_equal": "不能小于 {ge}",
    "less_than": "必须小于 {lt}",
    "less_than_equal": "不能大于 {le}",
    "literal_error": "可选 {expected}",
    "enum": "可选 {expected}",
    "string_pattern_mismatch": "格式不对（需符合 {pattern}）",
    "string_too_short": "不能为空",
    "missing": "缺少这一项",
    "extra_forbidden": "不认识的字段",
    "url_parsing": "不是有效的网址",
    "string_type": "需要文字（字符串）",
    "bool_type": "需要 true 或 false",
    "list_type": "需要一个列表",
    "dict_type": "需要一个对象（键值对）",
    "model_type": "需要一个对象（键值对）",
    "too_short": "至少需要 {min_length} 项",
    "too_long": "最多 {max_length} 项",
    "string_too_long": "最长 {max_length} 个字",
    "none_required": "不应给出",
    "date_parsing": "需要日期 YYYY-MM-DD",
    "date_from_datetime_parsing": "需要日期 YYYY-MM-DD",
    "datetime_parsing": "需要日期时间",
    "json_invalid": "不是合法的 JSON",
}


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the exclusive lock of `path` (on `.NAME.lock` beside it) for a read-modify-write:
    read the file inside the block, so no other process's update in between is lost."""
    import fcntl

    lock_path = path.with_name(f".{path.name}.lock")
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise ConfigError(
            f"无法锁定 {path} 以修改它（{os_error_cause(exc)}）：请检查该目录的权限。"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def config_lock(home: Path | None = None) -> contextlib.AbstractContextManager[None]:
    """`with config_lock(home):` load, change and save `wyckoff.json` without losing updates."""
    return locked(config_path(home))


def save_config(config: WyckoffConfig, home: Path | None = None) -> Path:
    """Write the config atomically with mode 0600."""
    path = config_path(home)
    payload = config.model_dump(mode="json", exclude_none=True)
    write_private_file(path, json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
    return path


def write_private_file(path: Path, text: str) -> None:
    """Replace `path` with `text` atomically; the file is readable by its owner only."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- Models found in the environment (zero-config start) --------------------------------

ENV_MODELS: tuple[dict[str, Any], ...] = (
    {
        "id": "claude",
        "provider": "claude",
        "model": "claude-sonnet-4-5",
        "env": "ANTHROPIC_API_KEY",
    },
    {"id": "openai", "provider": "openai", "model": "gpt-4.1", "env": "OPENAI_API_KEY"},
    {"id": "gemini", "provider": "gemini", "model": "gemini-2.5-flash", "env": "GEMINI_API_KEY"},
    {"id": "gemini", "provider": "gemini", "model": "gemini-2.5-flash", "env": "GOOGLE_API_KEY"},
    {
        "id": "deepseek",
        "provider": "openai",
        "model": "deepseek-chat",
        "env": "DEEPSEEK_API_KEY",
        "base_url": "https://api.deepseek.com",
    },
)


def detect_env_models() -> list[ModelConfig]:
    """Models usable from API keys in the environment; keys stay in the environment."""
    found: dict[str, ModelConfig] = {}
    for spec in ENV_MODELS:
        if spec["id"] in found or not os.environ.get(spec["env"]):
            continue
        base_url = spec.get("base_url")
        if spec["env"] == "OPENAI_API_KEY":
            base_url = os.environ.get("OPENAI_BASE_URL") or None
        found[spec["id"]] = ModelConfig(
            id=spec["id"],
            provider=spec["provider"],
            model=spec["model"],
            base_url=base_url,
            api_key_env=spec["env"],
            detected_from_env=True,
        )
    return list(found.values())


def effective_config(config: WyckoffConfig) -> WyckoffConfig:
    """The config as used: with no model configured, the ones detected in the environment."""
    if config.models:
        return config
    detected = detect_env_models()
    if not detected:
        return config
    return config.model_copy(update={"models": detected, "default": detected[0].id})


# --- Secrets --------------------------------------------------------------------------------

# "tushare_token" is a secret; "input_tokens" is not.
SECRET_KEY_NAMES = re.compile(
    r"(^|[_-])(api[_-]?key|token|password|passwd|secret|authorization|cookie)$", re.I
)
# Key-shaped tokens, only where a token starts: "desk-research-2026" and "<task-notification>"
# hold "sk-…" inside a word and are left alone. A bearer token holds a digit ("bearer
# instrument" is English). Known key values are masked wherever they occur.
_TOKEN_START = r"(?<![A-Za-z0-9_\-])"
SECRET_VALUE_PATTERNS = re.compile(
    rf"{_TOKEN_START}(?:sk-[A-Za-z0-9_\-]{{8,}}|AIza[0-9A-Za-z_\-]{{20,}}"
    r"|(?i:bearer)\s+(?=[A-Za-z._\-]*\d)[A-Za-z0-9._\-]{8,})"
)
REDACTED = "***"


MIN_SECRET_CHARS = 6  # shorter values would cut ordinary words out of every text
_remembered_secrets: set[str] = set()


def remember_secrets(*values: str | None) -> None:
    """Add key values this process has seen (configured or resolved) to every redaction."""
    _remembered_secrets.update(v for v in values if v and len(v) >= MIN_SECRET_CHARS)


def remember_configured_secrets(home: Path) -> None:
    """Learn the keys of the saved config (for redaction) in a command that needs no model; a
    broken config teaches none and is reported by the commands that use it."""
    with contextlib.suppress(ConfigError):
        load_config(home)


def known_secrets() -> list[str]:
    """Every key value this process might hold, longest first (a key containing another
    goes first): the well-known environment variables and every key of every config loaded
    or provider built. Empty and very short values are never "secrets"."""
    values = [os.environ.get(spec["env"], "") for spec in ENV_MODELS]
    values.append(os.environ.get("TUSHARE_TOKEN", ""))
    values += _remembered_secrets
    return sorted({v for v in values if len(v) >= MIN_SECRET_CHARS}, key=len, reverse=True)


def redact_text(text: str) -> str:
    """`text` with every known secret value and key-shaped strings replaced by ***."""
    return _redact_text(text, known_secrets())


def redact_value(value: Any) -> Any:
    """A copy of a JSON-like value with secret-named keys and secret values redacted."""
    return _redact_value(value, known_secrets())


class StreamRedactor:
    """Redacts a text that arrives in pieces: a tail that could be the start of a key is
    held back until the next piece shows whether it is one. That is the beginning of a
    known key, or the unfinished token at the end (it may be a key-shaped token, or a word
    like "desk-research" whose "sk-" must not be taken for one)."""

    def __init__(self) -> None:
        self.secrets = known_secrets()
        self.pending = ""

    def feed(self, piece: str) -> str:
        text = _mask_known(self.pending + piece, self.secrets)
        held = max(_unfinished_token(text), *(_partial_at_end(text, s) for s in self.secrets), 0)
        self.pending = text[len(text) - held :] if held else ""
        return SECRET_VALUE_PATTERNS.sub(REDACTED, text[: len(text) - held])

    def flush(self) -> str:
        text, self.pending = self.pending, ""
        return SECRET_VALUE_PATTERNS.sub(REDACTED, text)


# The run of token characters a text ends with, with a "Bearer " before it (a longer run is
# shown rather than held for ever).
TOKEN_TAIL = re.compile(r"(?i:bearer\s+)?[A-Za-z0-9_\-.]{0,200}\Z")


def _unfinished_token(text: str) -> int:
    """Length of the token (and its "Bearer ") the text may still be in the middle of."""
    match = TOKEN_TAIL.search(text)
    return len(match.group(0)) if match else 0


def _partial_at_end(text: str, secret: str) -> int:
    """Length of the longest end of `text` that is a proper beginning of `secret`."""
    for size in range(min(len(text), len(secret) - 1), 0, -1):
        if text.endswith(secret[:size]):
            return size
    return 0


def _mask_known(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def _redact_text(text: str, secrets: list[str]) -> str:
    return SECRET_VALUE_PATTERNS.sub(REDACTED, _mask_known(text, secrets))


def _redact_value(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, dict):
        return {
            k: REDACTED
            if isinstance(k, str) and SECRET_KEY_NAMES.search(k) and v
            else _redact_value(v, secrets)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact_value(v, secrets) for v in value]
    if isinstance(value, str):
        return _redact_text(value, secrets)
    return value
