"""Sweep results to files, one chunk at a time, so a sweep of any size runs in bounded memory.

    .parquet  long format (one row per point: the axes, then the variables), pyarrow ParquetWriter, one row group
              per chunk; text axes dictionary-encoded, numbers plain. On a dask cluster the workers write it: a
              folder of parts, one file per chunk (``check_parts``), read back as one table by pandas or pyarrow
    .csv      the same rows, appended chunk by chunk (pyarrow's CSV writer)
    .nc       NetCDF-4 (h5netcdf): the axes as dimensions with their coordinates, each chunk written into its
              block of every variable; units and code meanings in the attributes
Reading back: ``pandas.read_parquet`` (a file or a folder of parts) / ``read_csv``, ``xarray.open_dataset(path, engine="h5netcdf")``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tokenomy.answers.sweep_axes import CATEGORICAL, Grid, labels

SUFFIXES = (".parquet", ".csv", ".nc")


def check_out(path) -> Path:
    p = Path(path)
    if p.suffix not in SUFFIXES:
        raise ValueError(f"out: {str(path)!r} must end in {', '.join(SUFFIXES)}")
    if not p.parent.exists():
        raise ValueError(f"out: folder {str(p.parent)!r} does not exist")
    return p


def check_parts(path) -> Path:
    """A Parquet sweep written by dask workers: ``path`` a folder of parts (part-000000.parquet, ... one per chunk,
    in chunk order), new or empty, in an existing folder that the workers reach at the same path."""
    p = check_out(path)
    if p.suffix != ".parquet":
        raise ValueError(f"out: {str(path)!r}: workers write their own parts as Parquet only; give a .parquet folder")
    if p.exists() and (not p.is_dir() or any(p.iterdir())):
        raise ValueError(f"out: {str(path)!r} exists; the workers write a new (or empty) folder of parts")
    return p


def part_path(folder: Path, index: int) -> Path:
    return folder / f"part-{index:06d}.parquet"


class _Table:
    """Parquet and CSV: a chunk as a long table (the block's coordinates broadcast, then each variable)."""

    def __init__(self, path: Path, grid: Grid, units: dict, meta: dict) -> None:
        import pyarrow as pa

        self.pa, self.path, self.grid, self.units, self.meta = pa, path, grid, units, meta
        self.dicts = {n: pa.array([str(x) for x in labels(grid, n)]) for n in grid.names if n in CATEGORICAL}
        self.writer = None

    def _table(self, block, values):
        pa, g = self.pa, self.grid
        shape = tuple(s.stop - s.start for s in block)
        cols, names, constant = [], [], {}
        for i, (n, s) in enumerate(zip(g.names, block)):
            shp = [1] * len(shape)
            shp[i] = shape[i]
            # the block's coordinates along axis i, repeated as the long table's rows run: one array, written once;
            # a constant column (one value in this block) shared by every column that holds the same value
            along = np.arange(s.start, s.stop, dtype=np.int32) if n in self.dicts else np.asarray(g.values[i][s], float)
            key = (along.dtype.char, along[0]) if along.size == 1 else None
            flat = constant.get(key)
            if flat is None:
                flat = np.broadcast_to(along.reshape(shp), shape).ravel()
                if key is not None:
                    constant[key] = flat
            if n in self.dicts:
                col = pa.DictionaryArray.from_arrays(pa.array(flat), self.dicts[n])
                cols.append(col if self.path.suffix == ".parquet" else col.cast(pa.string()))
            else:
                cols.append(pa.array(flat))
            names.append(n)
        for k, v in values.items():
            cols.append(pa.array(np.ravel(v)))
            names.append(k)
        return pa.Table.from_arrays(cols, names=names)

    def write(self, block, values) -> None:
        t = self._table(block, values)
        if self.writer is None:
            if self.path.suffix == ".parquet":
                import pyarrow.parquet as pq

                meta = {b"tokenomy.sweep": json.dumps({"units": self.units, **self.meta}).encode()}
                # only the text axes are dictionaries; Parquet's default dictionary-encodes every column, and a float
                # column of distinct values pays for a dictionary it then abandons (2.4x slower writes, issue 27).
                # Min/max statistics for the numbers only: a dictionary column's cost a third of a part's write
                # (benchmarks/sweep.py's Dask run), and its dictionary page already lists its values
                numbers = [c for c in t.column_names if c not in self.dicts]
                self.writer = pq.ParquetWriter(self.path, t.schema.with_metadata(meta),
                                               use_dictionary=sorted(self.dicts) or False,
                                               write_statistics=numbers or False)
            else:
                import pyarrow.csv as pcsv

                self.writer = pcsv.CSVWriter(self.path, t.schema)
        self.writer.write_table(t)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


class _NetCDF:
    """NetCDF-4 via h5netcdf: dimensions = the axes given as lists (those given as one value are scalar coordinates,
    as in the Dataset); each chunk lands in its block of every variable."""

    def __init__(self, path: Path, grid: Grid, units: dict, meta: dict) -> None:
        import h5netcdf
        import h5py

        self.f = h5netcdf.File(path, "w")
        self.grid, self.units, self.vars = grid, units, {}
        self.keep = [i for i, n in enumerate(grid.names) if n not in grid.scalar]
        self.dims = tuple(grid.names[i] for i in self.keep)
        self.shape = tuple(grid.shape[i] for i in self.keep)
        self.f.dimensions = dict(zip(self.dims, self.shape))
        for n in grid.names:
            vals = labels(grid, n)
            dims = () if n in grid.scalar else (n,)
            text = n in CATEGORICAL
            v = self.f.create_variable(n, dims, dtype=h5py.string_dtype() if text else float)
            data = np.array([str(x) for x in vals], dtype=object) if text else np.asarray(vals, float)
            v[...] = data[0] if not dims else data
        self.f.attrs.update({k: json.dumps(v) if not isinstance(v, str) else v for k, v in meta.items()})

    def write(self, block, values) -> None:
        where = tuple(block[i] for i in self.keep)
        sub = tuple(s.stop - s.start for s in where)
        for k, v in values.items():
            if k not in self.vars:
                fill = None if v.dtype.kind == "i" else np.nan  # codes: -1 is a value, not a gap
                chunks = tuple(min(n, 1 << 16) if i == len(self.shape) - 1 else 1 for i, n in enumerate(self.shape))
                var = self.f.create_variable(k, self.dims, dtype=v.dtype, fillvalue=fill, chunks=chunks or None)
                if self.units.get(k):
                    var.attrs["units"] = self.units[k]
                self.vars[k] = var
            self.vars[k][where] = v.reshape(sub)

    def close(self) -> None:
        self.f.close()


def writer(path: Path, grid: Grid, units: dict, meta: dict):
    """The streaming writer for ``path``'s suffix: ``write(block, values)`` per chunk, then ``close()``."""
    return (_NetCDF if path.suffix == ".nc" else _Table)(path, grid, units, meta)
