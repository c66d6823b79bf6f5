"""Pydantic schemas for the TOML catalog files, by what the files describe: hardware.py (chips, systems, storage, KV
tiering), engines.py (serving engines, their flags, benchmark protocols), money.py (API prices, power, facility and
ownership), cases.py (tiered-KV and energy validation cases). catalog/loader.py validates each kind with its class
(loader.SCHEMAS), imported from here on first validation."""

from tokenomy.catalog.schema.hardware import (ChipFile, DTYPES, Flops, Hbm, HostLink, KvTieringFile,
                                              Link, Power, Price, Sourced, StorageFile, SystemFile,
                                              SystemHost, TIER_KEYS, WhatIfFile)
from tokenomy.catalog.schema.engines import (EngineAllReduce, EngineFile, EngineFlag, EngineFlagsFile,
                                             EngineFrontend, EngineGraphs, EngineHost, EngineKv,
                                             EngineKvDtype, EngineOverlap, EngineRouter,
                                             EngineScheduler, EngineWorker, ProtocolFile,
                                             ProtocolLengths, ProtocolLoad, ProtocolMetrics)
from tokenomy.catalog.schema.money import (AllInReference, ApiPriceFile, Board, Capex, Electricity,
                                           FacilityFile, HostShare, LongContextStep, Ownership,
                                           PowerFile, PowerSplit, PromptCacheTerms, Pue)
from tokenomy.catalog.schema.cases import (EnergyCase, EnergyCaseFile, EnergyClaim, EnergyClaimFile,
                                           EnergyClaimSide, EnergyClaimSource, EnergySource, KvTierCase,
                                           KvTierSource, KvTierValidationFile, KvTierWorkload)

__all__ = ["ChipFile", "DTYPES", "Flops", "Hbm", "HostLink", "KvTieringFile", "Link", "Power", "Price", "Sourced",
           "StorageFile", "SystemFile", "SystemHost", "TIER_KEYS", "WhatIfFile", "EngineAllReduce", "EngineFile",
           "EngineFlag", "EngineFlagsFile", "EngineFrontend", "EngineGraphs", "EngineHost", "EngineKv",
           "EngineKvDtype", "EngineOverlap", "EngineRouter", "EngineScheduler", "EngineWorker", "ProtocolFile",
           "ProtocolLengths", "ProtocolLoad", "ProtocolMetrics", "AllInReference", "ApiPriceFile", "Board", "Capex",
           "Electricity", "FacilityFile", "HostShare", "LongContextStep", "Ownership", "PowerFile", "PowerSplit",
           "PromptCacheTerms", "Pue", "EnergyCase", "EnergyCaseFile", "EnergyClaim", "EnergyClaimFile",
           "EnergyClaimSide", "EnergyClaimSource", "EnergySource", "KvTierCase", "KvTierSource",
           "KvTierValidationFile", "KvTierWorkload"]
