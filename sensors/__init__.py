"""Node side of stormwatch: what runs on (or stands in for) the sensor nodes."""
