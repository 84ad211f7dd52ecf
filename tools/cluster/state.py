"""What up() started and made, recorded as it goes, so down() undoes exactly that: processes by
process id, namespaces and links by name, a sysctl back to its value before. Written after every
change, so an up() that fails halfway is still undone."""
import json
import os
from typing import Dict, List


class State:
    def __init__(self, path: str):
        self.path = path
        self.data: Dict[str, object] = {'processes': [], 'netns': [], 'links': [], 'routes': [],
                                         'sysctl': {}}
        if os.path.exists(path):
            with open(path) as handle:
                self.data.update(json.load(handle))

    def save(self) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        scratch = self.path + '.tmp'
        with open(scratch, 'w') as handle:
            json.dump(self.data, handle, indent=1)
        os.replace(scratch, self.path)

    def add(self, kind: str, item) -> None:
        entries: List = self.data[kind]
        if item not in entries:
            entries.append(item)
            self.save()

    def remove(self, kind: str, item) -> None:
        entries: List = self.data[kind]
        if item in entries:
            entries.remove(item)
            self.save()

    def sysctl_before(self, key: str, value: str) -> None:
        """Keeps the first value seen: the one to restore."""
        self.data['sysctl'].setdefault(key, value)
        self.save()

    def processes(self) -> List[Dict[str, object]]:
        return list(self.data['processes'])

    def pid(self, name: str):
        return next((p['pid'] for p in self.data['processes'] if p['name'] == name), None)
