"""WYCKOFF_HOME, the validated `wyckoff.json`, API-key handling and atomic 0600 writes.

The config file is only ever replaced whole, through a temporary file and `os.replace`,
so a crash mid-write leaves the previous version. A file that fails to parse is reported
and never rewritten.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from wyckoff.errors import ConfigError

CONFIG_FILE = "wyckoff.json"
PROVIDERS = ("claude", "openai", "gemini")
MODEL_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"


def wyckoff_home() -> Path:
    """The folder that holds everything Wyckoff writes (created on demand, mode 0700)."""
    home = Path(os.environ.get("WYCKOFF_HOME") or Path.home() / ".wyckoff").expanduser()
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ConfigError(
            f"数据目录 {home} 无法使用（{exc.strerror}）：请把 WYCKOFF_HOME 设为一个可写的文件夹。"
        ) from None
    if not os.access(home, os.W_OK | os.X_OK):
        raise ConfigError(
            f"数据目录 {home} 不可写：请检查权限，或把 WYCKOFF_HOME 设为可写的文件夹。"
        )
    return home


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
            raise ValueError("base_url 必须以 http:// 或 https:// 开头")
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

    source: Literal["auto", "tushare", "akshare", "baostock", "demo"] = "auto"
    tushare_token: str | None = None
    tushare_url: str | None = None


class WyckoffConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    models: list[ModelConfig] = Field(default_factory=list)
    default: str | None = None
    fallback: str | None = None
    stream_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    data: DataConfig = Field(default_factory=DataConfig)

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


def config_path(home: Path | None = None) -> Path:
    return (home or wyckoff_home()) / CONFIG_FILE


def load_config(home: Path | None = None) -> WyckoffConfig:
    """Read and validate `wyckoff.json`; a missing file is an empty configuration."""
    path = config_path(home)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return WyckoffConfig()
    except OSError as exc:
        raise ConfigError(f"无法读取配置文件 {path}：{exc.strerror}。") from None
    except UnicodeDecodeError:
        raise ConfigError(
            f"配置文件 {path} 不是 UTF-8 编码的文本：请用 UTF-8 保存，或删除该文件后重试。"
        ) from None
    try:
        data = json.loads(raw)
    except RecursionError:
        raise ConfigError(
            f"配置文件 {path} 的 JSON 嵌套过深，不是 Wyckoff 的配置：请修正或删除该文件后重试。"
        ) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"配置文件 {path} 不是有效的 JSON（第 {exc.lineno} 行第 {exc.colno} 列：{exc.msg}）。"
            "请修正或删除该文件后重试；Wyckoff 不会改写它。"
        ) from None
    try:
        return WyckoffConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(
            f"配置文件 {path} 有误：{describe_validation_error(exc)}。"
            "请修正该文件后重试；Wyckoff 不会改写它。"
        ) from None


def describe_validation_error(exc: ValidationError) -> str:
    """The first problem of a pydantic error as one short phrase: `models.0.provider: ...`."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "顶层"
    message = first["msg"].removeprefix("Value error, ")
    return f"{where}：{message}"


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
SECRET_VALUE_PATTERNS = re.compile(
    r"sk-[A-Za-z0-9_\-]{8,}|AIza[0-9A-Za-z_\-]{20,}|(?i:bearer)\s+[A-Za-z0-9._\-]{8,}"
)
REDACTED = "***"


def known_secrets(config: WyckoffConfig | None = None) -> list[str]:
    """Every key value this process might hold, so it can be cut out of any text."""
    values = [os.environ.get(spec["env"], "") for spec in ENV_MODELS]
    values.append(os.environ.get("TUSHARE_TOKEN", ""))
    if config is not None:
        values += [m.resolved_api_key() or "" for m in config.models]
        values.append(config.data.tushare_token or "")
    return [v for v in values if len(v) >= 6]


def redact_text(text: str, secrets: list[str] | tuple[str, ...] = ()) -> str:
    """`text` with known secret values and key-shaped strings replaced by ***."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return SECRET_VALUE_PATTERNS.sub(REDACTED, text)


def redact_value(value: Any, secrets: list[str] | tuple[str, ...] = ()) -> Any:
    """A copy of a JSON-like value with secret-named keys and secret-shaped strings redacted."""
    if isinstance(value, dict):
        return {
            k: REDACTED
            if isinstance(k, str) and SECRET_KEY_NAMES.search(k) and v
            else redact_value(v, secrets)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact_value(v, secrets) for v in value]
    if isinstance(value, str):
        return redact_text(value, secrets)
    return value
