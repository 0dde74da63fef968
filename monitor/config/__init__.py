"""The configuration: the schema the engine and the shell read, and reading the file.

``schema.py`` puts the sites and services together from the rules' parameters
(``siterules.py``) and the building blocks (``base.py``); this package
re-exports its public names, so ``from monitor.config import Config`` is the
one way to name them. ``file.py`` reads a YAML file into a ``Config`` (it is
not imported here: the engine needs the schema only), and ``plausible.py``
holds ``check-config``'s warnings.
"""

from .schema import (
    CLOCK_CONDITIONS,
    DEFAULT_ABSOLUTE_NTU,
    ENV_PREFIX,
    ID_PATTERN,
    SENSOR_KINDS,
    ArchiveConfig,
    BrokerConfig,
    Config,
    DaemonConfig,
    DeadLettersConfig,
    InfluxConfig,
    Model,
    NotifyConfig,
    NotifyTarget,
    Pause,
    Practice,
    QualifiedProfessional,
    RainRules,
    SensorConfig,
    ShardConfig,
    SiteConfig,
    SiteNotify,
    TlsConfig,
    TrapConfig,
    TurbidityPair,
    WeatherConfig,
    WebConfig,
    photo_pixels_of,
    photos_dir_of,
)

__all__ = [
    "CLOCK_CONDITIONS", "DEFAULT_ABSOLUTE_NTU", "ENV_PREFIX", "ID_PATTERN", "SENSOR_KINDS",
    "ArchiveConfig", "BrokerConfig", "Config", "DaemonConfig", "DeadLettersConfig",
    "InfluxConfig", "Model", "NotifyConfig", "NotifyTarget", "Pause", "Practice",
    "QualifiedProfessional", "RainRules",
    "SensorConfig", "ShardConfig", "SiteConfig", "SiteNotify", "TlsConfig", "TrapConfig",
    "TurbidityPair",
    "WeatherConfig", "WebConfig", "photo_pixels_of", "photos_dir_of",
]
