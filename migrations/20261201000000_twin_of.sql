-- The sha256 of the real file a synthetic twin stands for (a hub level
-- measured with --shape-only), from its dyno.synthetic.source label; NULL
-- for a real model or any other synthetic shape. `dyno predict` counts a
-- twin's runs as observations of that file, labelled "by its shape".
ALTER TABLE models ADD COLUMN twin_of_sha256 TEXT;
