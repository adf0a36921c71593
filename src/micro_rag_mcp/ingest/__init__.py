"""From files to text: the readers, the folder scan, ignore rules, the isolated reader process."""
